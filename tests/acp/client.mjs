// An ACP client for tests/it/acp.rs, built on the official
// @agentclientprotocol/sdk (from TERN_ACP_NODE_DIR): it starts `tern acp`
// ($TERN, with $TERN_ARGS as a JSON list), plays the scenario given as JSON
// in the first argument, and prints one JSON transcript line of what it
// saw: the initialize answer, every session/update, every permission
// question and fs read, each request's answer or error.
//
// Scenario: { "steps": [...], "permission": "<optionId to pick>",
//             "buffers": { "<abs path>": "<unsaved text>" }, "fs": true }
// Steps:    { "op": "new", "mcpServers": [...] }
//           { "op": "load", "sessionId": "<id>" }   (default: the last one)
//           { "op": "prompt", "text": "...", "cancelWhenFile": "<path>" }
//           { "op": "set_mode", "modeId": "..." }
//           { "op": "set_config", "configId": "...", "value": "..." }

import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { existsSync, readFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import path from "node:path";

const dir = process.env.TERN_ACP_NODE_DIR;
const require = createRequire(path.join(dir, "package.json"));
const acp = await import(require.resolve("@agentclientprotocol/sdk"));

const scenario = JSON.parse(process.argv[2]);
const out = {
  initialize: null,
  sessions: [],
  updates: [],
  permissions: [],
  reads: [],
  writes: [],
  answers: [],
  errors: [],
};

const child = spawn(process.env.TERN, JSON.parse(process.env.TERN_ARGS || "[]"), {
  stdio: ["pipe", "pipe", "inherit"],
});
out.pid = child.pid;

const stream = acp.ndJsonStream(
  Writable.toWeb(child.stdin),
  Readable.toWeb(child.stdout),
);

const app = acp
  .client()
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    out.updates.push(params);
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    out.permissions.push(params);
    const pick = scenario.permission ?? "allow_once";
    if (pick === "cancelled") return { outcome: { outcome: "cancelled" } };
    return { outcome: { outcome: "selected", optionId: pick } };
  })
  .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
    out.reads.push(params);
    const buffers = scenario.buffers ?? {};
    if (params.path in buffers) return { content: buffers[params.path] };
    return { content: readFileSync(params.path, "utf8") };
  })
  .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
    out.writes.push(params);
    return {};
  });

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

try {
  await app.connectWith(stream, async (agent) => {
    out.initialize = await agent.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: {
        fs: { readTextFile: scenario.fs ?? false, writeTextFile: scenario.fsWrite ?? false },
        terminal: false,
      },
    });
    let session = scenario.sessionId ?? null;
    for (const step of scenario.steps) {
      try {
        if (step.op === "new") {
          const r = await agent.request(acp.methods.agent.session.new, {
            cwd: process.cwd(),
            mcpServers: step.mcpServers ?? [],
          });
          session = r.sessionId;
          out.sessions.push(r);
          out.answers.push({ op: "new", result: r });
        } else if (step.op === "load") {
          session = step.sessionId ?? session;
          const r = await agent.request(acp.methods.agent.session.load, {
            sessionId: session,
            cwd: process.cwd(),
            mcpServers: [],
          });
          out.answers.push({ op: "load", result: r, updatesBefore: out.updates.length });
        } else if (step.op === "prompt") {
          const pending = agent.request(acp.methods.agent.session.prompt, {
            sessionId: session,
            prompt: [{ type: "text", text: step.text }],
          });
          if (step.cancelWhenFile) {
            const deadline = Date.now() + 30000;
            while (!existsSync(step.cancelWhenFile) && Date.now() < deadline) await sleep(50);
            await sleep(200);
            await agent.notify(acp.methods.agent.session.cancel, { sessionId: session });
          }
          const r = await pending;
          out.answers.push({ op: "prompt", result: r, updatesAfter: out.updates.length });
        } else if (step.op === "set_config") {
          const r = await agent.request(acp.methods.agent.session.setConfigOption, {
            sessionId: session,
            configId: step.configId,
            value: step.value,
          });
          out.answers.push({ op: "set_config", result: r });
        } else if (step.op === "set_mode") {
          const r = await agent.request(acp.methods.agent.session.setMode, {
            sessionId: session,
            modeId: step.modeId,
          });
          out.answers.push({ op: "set_mode", result: r });
        }
      } catch (e) {
        out.errors.push({ op: step.op, code: e?.code, message: String(e?.message ?? e) });
      }
    }
  });
} catch (e) {
  out.errors.push({ op: "connection", message: String(e?.stack ?? e) });
}
child.stdin.end();
const code = await new Promise((r) => {
  if (child.exitCode !== null) r(child.exitCode);
  else child.on("exit", (c) => r(c));
});
out.exit = code;
process.stdout.write(JSON.stringify(out) + "\n");
