// Drives tern through the official TypeScript Agent SDK
// (@anthropic-ai/claude-agent-sdk), unmodified: pathToClaudeCodeExecutable
// is tern, ANTHROPIC_BASE_URL the test's stand-in. Each scenario prints one
// JSON line of observations as its last line; tests/it/sdk.rs checks them
// together with the stand-in's request log.
//
// Usage: node scenarios.mjs <scenario>
//   TERN = the tern binary, TERN_SDK_NODE_DIR = the folder whose
//   node_modules holds the SDK (ci/sdk.sh)

import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const req = createRequire(`${process.env.TERN_SDK_NODE_DIR}/package.json`);
const load = async (name) => import(pathToFileURL(req.resolve(name)).href);
const sdk = await load("@anthropic-ai/claude-agent-sdk");
const { z } = await load("zod");

const options = (extra = {}) => ({
  pathToClaudeCodeExecutable: process.env.TERN,
  cwd: process.cwd(),
  env: { ...process.env },
  stderr: (text) => process.stderr.write(text),
  ...extra,
});

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function collect(q) {
  const messages = [];
  for await (const m of q) messages.push(m);
  return messages;
}

// A stream of prompts that stays open until `done` resolves, so the SDK
// keeps the session (and its control channel) alive between them.
function prompts(texts, next) {
  return (async function* () {
    for (const text of texts) {
      yield {
        type: "user",
        message: { role: "user", content: text },
        parent_tool_use_id: null,
        session_id: "",
      };
      await next();
    }
  })();
}

// Runs the prompts one after the other; `between` runs after each result.
async function session(texts, opts, between = async () => {}) {
  const messages = [];
  let release;
  let results = 0;
  const waitResult = () => new Promise((r) => (release = r));
  const q = sdk.query({ prompt: prompts(texts, () => waitResult()), options: opts });
  for await (const m of q) {
    messages.push(m);
    if (m.type === "result") {
      results += 1;
      await between(q, results);
      release?.();
      if (results === texts.length) break;
    }
  }
  return { messages, q };
}

function summarise(messages) {
  const out = { types: [], tool_uses: [], tool_results: [], results: [] };
  for (const m of messages) {
    out.types.push(m.subtype ? `${m.type}/${m.subtype}` : m.type);
    if (m.type === "assistant") {
      for (const b of m.message.content) if (b.type === "tool_use") out.tool_uses.push(b.name);
    }
    if (m.type === "user" && Array.isArray(m.message.content)) {
      for (const b of m.message.content) {
        if (b.type === "tool_result") {
          out.tool_results.push({ is_error: !!b.is_error, content: JSON.stringify(b.content) });
        }
      }
    }
    if (m.type === "result") out.results.push(m);
  }
  return out;
}

function calcServer(calls) {
  const text = (t) => ({ content: [{ type: "text", text: t }] });
  return sdk.createSdkMcpServer({
    name: "calc",
    version: "1.0.0",
    tools: [
      sdk.tool("add", "Add two numbers", { a: z.number(), b: z.number() }, async (args) => {
        calls.push({ tool: "add", args });
        return text(`sum=${args.a + args.b}`);
      }),
      sdk.tool("boom", "Always fails", {}, async () => {
        calls.push({ tool: "boom" });
        throw new Error("the boom handler blew up");
      }),
      sdk.tool("secret", "Must never run", {}, async () => {
        calls.push({ tool: "secret" });
        return text("leaked");
      }),
      sdk.tool("slow", "Takes too long", {}, async () => {
        calls.push({ tool: "slow" });
        await sleep(8000);
        return text("late");
      }),
    ],
  });
}

const scenarios = {
  async sdk_mcp() {
    const calls = [];
    const asked = [];
    let status;
    const { messages } = await session(
      ["use the calculator"],
      options({
        mcpServers: { calc: calcServer(calls) },
        allowedTools: ["mcp__calc__add"],
        disallowedTools: ["mcp__calc__secret"],
        canUseTool: async (name, input) => {
          asked.push(name);
          return { behavior: "allow", updatedInput: input };
        },
      }),
      async (q) => {
        status = await q.mcpServerStatus();
      },
    );
    return { ...summarise(messages), calls, asked, status };
  },

  async init_fields() {
    const hookSaw = [];
    const { messages, q } = await session(
      ["look around"],
      options({
        systemPrompt: { type: "preset", preset: "claude_code", append: "APPENDED BY THE TS SDK" },
        permissionMode: "bypassPermissions",
        allowDangerouslySkipPermissions: true,
        maxThinkingTokens: 2048,
        mcpServers: {
          scripted: {
            type: "stdio",
            command: "python3",
            args: [process.env.SCRIPTED_SERVER, "changing"],
          },
        },
        agents: { reviewer: { description: "Reviews code", prompt: "Review it." } },
        disallowedTools: ["Bash"],
        disallowedToolsDelivery: "initialize",
        hooks: {
          PreToolUse: [
            {
              matcher: "Glob",
              hooks: [
                async (input) => {
                  hookSaw.push(input.tool_name);
                  return {};
                },
              ],
            },
          ],
        },
      }),
    );
    const init = messages.find((m) => m.type === "system" && m.subtype === "init");
    const initialization = await q.initializationResult();
    // A field tern cannot honour is refused by name.
    let refused = "no error";
    try {
      await collect(
        sdk.query({
          prompt: "x",
          options: options({ settings: { model: "m" }, settingsDelivery: "initialize" }),
        }),
      );
    } catch (e) {
      refused = String(e?.message ?? e);
    }
    return {
      ...summarise(messages),
      init,
      hook_saw: hookSaw,
      mcp_servers_applied: initialization.mcp_servers_applied,
      refused,
    };
  },

  async structured() {
    const schema = {
      type: "object",
      properties: { answer: { type: "integer" } },
      required: ["answer"],
      additionalProperties: false,
    };
    const messages = await collect(
      sdk.query({
        prompt: "what is six times seven",
        options: options({ outputFormat: { type: "json_schema", schema } }),
      }),
    );
    return summarise(messages);
  },

  async control() {
    const calls = [];
    const out = {};
    await session(
      ["first", "second"],
      options({ mcpServers: { calc: calcServer(calls) }, allowedTools: ["mcp__calc__add"] }),
      async (q, n) => {
        if (n === 1) {
          out.status = await q.mcpServerStatus();
          out.usage = await q.getContextUsage();
          await q.toggleMcpServer("calc", false);
          out.status_off = await q.mcpServerStatus();
          try {
            await q.setMaxThinkingTokens(1000);
            out.thinking = "no error";
          } catch (e) {
            out.thinking = String(e?.message ?? e);
          }
        } else {
          await q.toggleMcpServer("calc", true);
          await q.reconnectMcpServer("calc");
          out.status_on = await q.mcpServerStatus();
          try {
            await q.reconnectMcpServer("nosuch");
            out.unknown_server = "no error";
          } catch (e) {
            out.unknown_server = String(e?.message ?? e);
          }
        }
      },
    );
    return out;
  },

  async subagent() {
    const { messages } = await session(["delegate the search", "now in the background"], options());
    const out = summarise(messages);
    out.children = messages
      .filter((m) => (m.type === "assistant" || m.type === "user") && m.parent_tool_use_id)
      .map((m) => ({ type: m.type, parent: m.parent_tool_use_id }));
    out.tasks = messages
      .filter((m) => m.type === "system" && m.subtype?.startsWith("task_"))
      .map((m) => ({
        type: m.subtype,
        task_id: m.task_id,
        tool_use_id: m.tool_use_id ?? null,
        status: m.status ?? m.patch?.status ?? null,
        task_type: m.task_type ?? null,
        background: m.is_backgrounded ?? null,
      }));
    return out;
  },

  async fallback() {
    const messages = await collect(
      sdk.query({
        prompt: "hello",
        options: options({ model: "claude-main", fallbackModel: "claude-spare" }),
      }),
    );
    return summarise(messages);
  },

  async fields() {
    const contexts = [];
    const { messages } = await session(
      ["inspect", "fail now"],
      options({
        canUseTool: async (name, input, ctx) => {
          contexts.push({
            tool: name,
            suggestions: ctx.suggestions ?? [],
            blocked_path: ctx.blockedPath ?? null,
            display_name: ctx.displayName ?? null,
            description: ctx.description ?? null,
          });
          return { behavior: "deny", message: "custom denial text" };
        },
      }),
    );
    const out = summarise(messages);
    const init = messages.find((m) => m.type === "system" && m.subtype === "init");
    out.init_keys = Object.keys(init).sort();
    out.timestamps = messages
      .filter((m) => m.type === "assistant" || m.type === "user")
      .map((m) => m.timestamp ?? null);
    out.tool_use_results = messages
      .filter((m) => m.type === "user" && m.tool_use_result !== undefined)
      .map((m) => m.tool_use_result);
    out.contexts = contexts;
    return out;
  },

  // An MCP server on the Python SDK (tests/mcp/sdk_asking_server.py,
  // SDK_ASKER_PYTHON / SDK_ASKER) asks for a form: the application's
  // onElicitation fills it; then mcp_status says what the server offers.
  async elicitation() {
    const asked = [];
    let status;
    const { messages } = await session(
      ["who am I"],
      options({
        permissionMode: "bypassPermissions",
        allowDangerouslySkipPermissions: true,
        mcpServers: {
          sdk: {
            type: "stdio",
            command: process.env.SDK_ASKER_PYTHON,
            args: [process.env.SDK_ASKER, "stdio", process.env.SDK_ASKER_LOG],
          },
        },
        onElicitation: async (request) => {
          asked.push(request);
          return { action: "accept", content: { name: "Grace" } };
        },
      }),
      async (q) => {
        status = await q.mcpServerStatus();
      },
    );
    return { ...summarise(messages), asked, status };
  },
};

const name = process.argv[2];
const result = await scenarios[name]();
console.log(JSON.stringify(result));
// The SDK may keep handles (timers, the child) open; the answer is out.
process.exit(0);
