"""Drives tern through the official Claude Agent SDK (claude-agent-sdk),
unmodified: cli_path points at tern, ANTHROPIC_BASE_URL at the test's
stand-in. Each scenario prints one JSON line of observations as its last
line; tests/it/sdk.rs checks them together with the stand-in's request log.

Usage: python3 scenarios.py <scenario>   (TERN = path of the tern binary)
"""

import json
import os
import sys

import anyio
from claude_agent_sdk import (
    AgentDefinition,
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    PermissionUpdate,
    ResultMessage,
    SystemMessage,
    TaskNotificationMessage,
    TaskStartedMessage,
    TaskUpdatedMessage,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
    create_sdk_mcp_server,
    query,
    tool,
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


def result_fields(m):
    return {
        "subtype": m.subtype,
        "is_error": m.is_error,
        "text": m.result,
        "structured_output": m.structured_output,
        "model_usage": m.model_usage,
        "terminal_reason": m.terminal_reason,
        "api_error_status": m.api_error_status,
        "num_turns": m.num_turns,
    }


async def run_client(opts, prompts):
    """Sends each prompt in one session; returns every message."""
    messages = []
    async with ClaudeSDKClient(options=opts) as client:
        for p in prompts:
            await client.query(p)
            async for m in client.receive_response():
                messages.append(m)
    return messages


def calc_server(calls):
    """An in-process SDK MCP server; each handler notes that it ran."""

    @tool("add", "Add two numbers", {"a": float, "b": float})
    async def add(args):
        calls.append({"tool": "add", "args": args})
        return {"content": [{"type": "text", "text": f"sum={args['a'] + args['b']:g}"}]}

    @tool("boom", "Always fails", {})
    async def boom(args):
        calls.append({"tool": "boom"})
        raise RuntimeError("the boom handler blew up")

    @tool("secret", "Must never run", {})
    async def secret(args):
        calls.append({"tool": "secret"})
        return {"content": [{"type": "text", "text": "leaked"}]}

    @tool("slow", "Takes too long", {})
    async def slow(args):
        calls.append({"tool": "slow"})
        await anyio.sleep(8)
        return {"content": [{"type": "text", "text": "late"}]}

    return create_sdk_mcp_server("calc", tools=[add, boom, secret, slow])


async def sdk_mcp():
    calls, asked = [], []

    async def decide(name, tool_input, context):
        asked.append(name)
        return PermissionResultAllow()

    opts = options(
        mcp_servers={"calc": calc_server(calls)},
        allowed_tools=["mcp__calc__add"],
        disallowed_tools=["mcp__calc__secret"],
        can_use_tool=decide,
    )
    messages = []
    status = None
    async with ClaudeSDKClient(options=opts) as client:
        await client.query("use the calculator")
        async for m in client.receive_response():
            messages.append(m)
        status = await client.get_mcp_status()
    out = summarise(messages)
    out["calls"] = calls
    out["asked"] = asked
    out["status"] = status
    return out


async def init_fields():
    seen = []

    async def guard(hook_input, tool_use_id, context):
        seen.append(hook_input.get("tool_name"))
        return {}

    opts = options(
        system_prompt="You are the Python SDK test prompt.",
        permission_mode="bypassPermissions",
        max_thinking_tokens=2048,
        agents={
            "reviewer": AgentDefinition(description="Reviews code", prompt="Review it.")
        },
        hooks={"PreToolUse": [HookMatcher(matcher="Glob", hooks=[guard])]},
        extra_args={"debug-to-stderr": None},
    )
    messages = await run_client(opts, ["look around"])
    out = summarise(messages)
    init = next(m for m in messages if isinstance(m, SystemMessage) and m.subtype == "init")
    out["init"] = init.data
    out["hook_saw"] = seen
    return out


async def structured():
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "integer"}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    opts = options(output_format={"type": "json_schema", "schema": schema})
    messages = [m async for m in query(prompt="what is six times seven", options=opts)]
    out = summarise(messages)
    out["result"] = result_fields(next(m for m in messages if isinstance(m, ResultMessage)))
    return out


async def control():
    calls = []
    out = {}
    opts = options(mcp_servers={"calc": calc_server(calls)}, allowed_tools=["mcp__calc__add"])
    async with ClaudeSDKClient(options=opts) as client:
        await client.query("first")
        async for m in client.receive_response():
            pass
        out["status"] = await client.get_mcp_status()
        out["usage"] = await client.get_context_usage()
        await client.toggle_mcp_server("calc", False)
        out["status_off"] = await client.get_mcp_status()
        await client.query("second")
        async for m in client.receive_response():
            pass
        await client.toggle_mcp_server("calc", True)
        await client.reconnect_mcp_server("calc")
        out["status_on"] = await client.get_mcp_status()
        try:
            await client.reconnect_mcp_server("nosuch")
            out["unknown_server"] = "no error"
        except Exception as e:
            out["unknown_server"] = str(e)
    return out


async def subagent():
    messages = await run_client(options(), ["delegate the search", "now in the background"])
    out = summarise(messages)
    out["children"] = [
        {"type": type(m).__name__, "parent": m.parent_tool_use_id}
        for m in messages
        if isinstance(m, (AssistantMessage, UserMessage)) and m.parent_tool_use_id
    ]
    out["tasks"] = [
        {
            "type": type(m).__name__,
            "task_id": m.task_id,
            "tool_use_id": getattr(m, "tool_use_id", None),
            "status": getattr(m, "status", None),
            "task_type": getattr(m, "task_type", None),
            "background": m.data.get("is_backgrounded"),
        }
        for m in messages
        if isinstance(m, (TaskStartedMessage, TaskNotificationMessage, TaskUpdatedMessage))
    ]
    return out


async def fallback():
    opts = options(model="claude-main", fallback_model="claude-spare")
    messages = [m async for m in query(prompt="hello", options=opts)]
    out = summarise(messages)
    out["result"] = result_fields(next(m for m in messages if isinstance(m, ResultMessage)))
    return out


async def fields():
    contexts = []

    async def decide(name, tool_input, context):
        contexts.append(
            {
                "tool": name,
                "suggestions": [
                    {
                        "type": s.type,
                        "behavior": s.behavior,
                        "rules": [
                            {"tool": r.tool_name, "content": r.rule_content}
                            for r in (s.rules or [])
                        ],
                    }
                    for s in context.suggestions
                ],
                "blocked_path": context.blocked_path,
                "display_name": context.display_name,
                "description": context.description,
            }
        )
        return PermissionResultDeny(message="custom denial text")

    messages = await run_client(options(can_use_tool=decide), ["inspect", "fail now"])
    out = summarise(messages)
    init = next(m for m in messages if isinstance(m, SystemMessage) and m.subtype == "init")
    out["init_keys"] = sorted(init.data.keys())
    out["results"] = [result_fields(m) for m in messages if isinstance(m, ResultMessage)]
    out["tool_use_results"] = [
        m.tool_use_result for m in messages if isinstance(m, UserMessage) and m.tool_use_result
    ]
    out["contexts"] = contexts
    return out


async def ask_and_plan():
    asked = []

    async def decide(tool, tool_input, context):
        asked.append(tool)
        if tool == "AskUserQuestion":
            # The application's picker: the second option of each question.
            answers = {
                q["question"]: q["options"][1]["label"] for q in tool_input["questions"]
            }
            return PermissionResultAllow(updated_input={**tool_input, "answers": answers})
        if tool == "ExitPlanMode":
            return PermissionResultAllow(
                updated_permissions=[PermissionUpdate(type="setMode", mode="acceptEdits")]
            )
        return PermissionResultDeny(message="not asked for")

    messages = []
    async with ClaudeSDKClient(
        # The test's project settings hold its Notification hooks: asked
        # for by name, which is how a program trusts them for its run.
        options=options(
            can_use_tool=decide,
            permission_mode="plan",
            setting_sources=["user", "project"],
        )
    ) as client:
        await client.query("plan the database work, then do it")
        async for m in client.receive_response():
            messages.append(m)
    out = summarise(messages)
    out["asked"] = asked
    return out


async def plugin():
    # The plugin the test wrote beside the work directory.
    path = os.getcwd() + ".plugins/sdkplug"
    init = {}
    messages = []
    opts = options(plugins=[{"type": "local", "path": path}])
    async for m in query(prompt="/sdkplug:hello sdk", options=opts):
        if isinstance(m, SystemMessage) and m.subtype == "init":
            init = m.data
        messages.append(m)
    out = summarise(messages)
    out["plugins"] = [p.get("name") for p in init.get("plugins", [])]
    out["slash_commands"] = init.get("slash_commands", [])
    out["agents"] = init.get("agents", [])
    return out


SCENARIOS = {
    "plugin": plugin,
    "ask_and_plan": ask_and_plan,
    "sdk_mcp": sdk_mcp,
    "init_fields": init_fields,
    "structured": structured,
    "control": control,
    "subagent": subagent,
    "fallback": fallback,
    "fields": fields,
    "tool_turn": tool_turn,
    "can_use_tool": can_use_tool,
    "hook_blocks": hook_blocks,
    "interrupt": interrupt,
}

if __name__ == "__main__":
    result = anyio.run(SCENARIOS[sys.argv[1]])
    print(json.dumps(result, default=str))
