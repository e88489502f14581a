"""Drives tern through the official Claude Agent SDK (claude-agent-sdk),
unmodified: cli_path points at tern, ANTHROPIC_BASE_URL at the test's
stand-in. Each scenario prints one JSON line of observations as its last
line; tests/sdk.rs checks them together with the stand-in's request log.

Usage: python3 scenarios.py <scenario>   (TERN = path of the tern binary)
"""

import json
import os
import sys

import anyio
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
    query,
)


def options(**kw):
    return ClaudeAgentOptions(cli_path=os.environ["TERN"], cwd=os.getcwd(), **kw)


def summarise(messages):
    out = {"types": [], "tool_uses": [], "tool_results": [], "result": None}
    for m in messages:
        out["types"].append(type(m).__name__)
        if isinstance(m, AssistantMessage):
            for b in m.content:
                if isinstance(b, ToolUseBlock):
                    out["tool_uses"].append(b.name)
        if isinstance(m, UserMessage) and isinstance(m.content, list):
            for b in m.content:
                if isinstance(b, ToolResultBlock):
                    out["tool_results"].append(
                        {"is_error": bool(b.is_error), "content": str(b.content)}
                    )
        if isinstance(m, ResultMessage):
            out.setdefault("subtypes", []).append(m.subtype)
            out["result"] = {
                "subtype": m.subtype,
                "is_error": m.is_error,
                "text": m.result,
                "session_id": m.session_id,
            }
    return out


async def tool_turn():
    messages = [m async for m in query(prompt="list the files", options=options())]
    return summarise(messages)


async def can_use_tool():
    asked = []

    async def decide(tool, tool_input, context):
        asked.append({"tool": tool, "command": tool_input.get("command")})
        if "allowed" in tool_input.get("command", ""):
            return PermissionResultAllow()
        return PermissionResultDeny(message="not this one")

    messages = []
    async with ClaudeSDKClient(options=options(can_use_tool=decide)) as client:
        await client.query("touch two files")
        async for m in client.receive_response():
            messages.append(m)
    out = summarise(messages)
    out["asked"] = asked
    return out


async def hook_blocks():
    seen = []

    async def guard(hook_input, tool_use_id, context):
        seen.append(hook_input.get("tool_input", {}).get("command"))
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": "blocked by the SDK hook",
            }
        }

    hooks = {"PreToolUse": [HookMatcher(matcher="Bash", hooks=[guard])]}
    messages = []
    async with ClaudeSDKClient(
        options=options(hooks=hooks, permission_mode="bypassPermissions")
    ) as client:
        await client.query("run something")
        async for m in client.receive_response():
            messages.append(m)
    out = summarise(messages)
    out["hook_saw"] = seen
    return out


async def interrupt():
    messages = []
    async with ClaudeSDKClient(options=options()) as client:
        await client.query("tell me a long story")
        # Wait until the answer has started streaming, then interrupt.
        with anyio.fail_after(20):
            while not os.path.exists("stream-started"):
                await anyio.sleep(0.02)
        began = anyio.current_time()
        await client.interrupt()
        async for m in client.receive_response():
            messages.append(m)
        took = anyio.current_time() - began
        # The session goes on after an interrupt.
        await client.query("are you still there?")
        async for m in client.receive_response():
            messages.append(m)
    out = summarise(messages)
    out["interrupt_seconds"] = took
    return out


SCENARIOS = {
    "tool_turn": tool_turn,
    "can_use_tool": can_use_tool,
    "hook_blocks": hook_blocks,
    "interrupt": interrupt,
}

if __name__ == "__main__":
    result = anyio.run(SCENARIOS[sys.argv[1]])
    print(json.dumps(result))
