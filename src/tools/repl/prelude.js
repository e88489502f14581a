// The REPL's managed globals, installed once when a context starts and
// refreshed (__refresh) before every call. Host functions: __host(name,
// json) runs one inner tool call through the permission pipeline and
// answers {content, is_error}; __sample(json) asks the small model (haiku);
// __schema_problem(name, json) says why a tool cannot be registered;
// __sleep(ms) waits (timers).
(function () {
  "use strict";
  const G = globalThis;
  const managed = new Set();
  let out = [], err = [], consoleBytes = 0, consoleFull = false;
  const CONSOLE_LIMIT = 52428800;
  let cwd = "", sessionCwd = "";
  let timers = [], timerSeq = 0;
  // Tools this context registered, and this call's changes to them.
  const registered = new Map();
  let changes = [];

  const show = (v) => {
    if (typeof v === "string") return v;
    if (typeof v === "function") return `[Function ${v.name || "anonymous"}]`;
    if (v === undefined) return "undefined";
    if (typeof v === "bigint") return `${v}n`;
    if (typeof v === "symbol") return v.toString();
    try {
      const s = JSON.stringify(v, (k, x) => (typeof x === "bigint" ? `${x}n` : x), 2);
      return s === undefined ? String(v) : s;
    } catch (_) {
      try { return String(v); } catch (_) { return "[value that cannot be shown]"; }
    }
  };

  const write = (to, args) => {
    if (consoleFull) return;
    const line = args.map(show).join(" ") + "\n";
    consoleBytes += line.length;
    if (consoleBytes > CONSOLE_LIMIT) {
      consoleFull = true;
      err.push("[console output over 50 MiB: the rest was dropped]\n");
      return;
    }
    to.push(line);
  };

  const abs = (p) => {
    p = String(p);
    if (p.startsWith("/") || p.startsWith("~") || cwd === "") return p;
    return cwd.replace(/\/+$/, "") + "/" + p;
  };

  const call = (name, input) => {
    const text = __host(String(name), JSON.stringify(input === undefined ? {} : input));
    const r = JSON.parse(text);
    if (r.is_error) {
      const e = new Error(`${name}: ${r.content}`);
      e.tool = name;
      throw e;
    }
    return r.content;
  };

  const shQuote = (s) => "'" + String(s).replace(/'/g, "'\\''") + "'";

  // Read numbers its lines ("     1\tline\n"); the shorthand hands back
  // the text, every line ended by a newline. A text that is not all of
  // the file is an error unless a window was asked for: written back with
  // put(), it would cut the file.
  const unnumber = (text, windowed) => {
    if (text === "(the file exists but is empty)") return "";
    let body = text;
    const more = /\n\(showing lines \d+-\d+ of \d+; use offset \d+ to continue\)\n$/.exec(body);
    if (more) {
      if (!windowed) throw new Error("cat: the file is longer than one Read shows; pass {offset, limit} to read it in parts");
      body = body.slice(0, more.index + 1);
    }
    if (!windowed && body.includes("… [line truncated]")) {
      throw new Error("cat: a line is longer than Read shows (2000 characters)");
    }
    return body.split("\n").slice(0, -1)
      .map((l) => { const m = /^\s*\d+\t/.exec(l); return (m ? l.slice(m[0].length) : l) + "\n"; })
      .join("");
  };

  const lines = (text) => text.split("\n").filter((l) => l !== "" && !l.startsWith("No files found"));

  const defs = {
    sh: (command, opts) => {
      const c = cwd !== sessionCwd && cwd !== "" ? `cd ${shQuote(cwd)} && ${command}` : String(command);
      return call("Bash", Object.assign({ command: c }, opts || {}));
    },
    cat: (path, opts) => unnumber(
      call("Read", Object.assign({ file_path: abs(path) }, opts || {})),
      opts !== undefined && (opts.offset !== undefined || opts.limit !== undefined)),
    rg: (pattern, path, opts) => call("Grep", Object.assign(
      { pattern: String(pattern), output_mode: "content", "-n": true },
      path === undefined ? {} : { path: abs(path) }, opts || {})),
    rgf: (pattern, path, opts) => lines(call("Grep", Object.assign(
      { pattern: String(pattern), output_mode: "files_with_matches" },
      path === undefined ? {} : { path: abs(path) }, opts || {}))),
    gl: (pattern, path) => lines(call("Glob", Object.assign(
      { pattern: String(pattern) }, path === undefined ? {} : { path: abs(path) }))),
    haiku: (prompt, schema) => {
      const input = { prompt: String(prompt) };
      if (schema !== undefined && schema !== null) {
        try { input.schema = JSON.parse(JSON.stringify(schema)); } catch (_) {
          throw new Error("haiku: the schema must be a JSON-serialisable object");
        }
      }
      const r = JSON.parse(__sample(JSON.stringify(input)));
      if (r.is_error) throw new Error(`haiku: ${r.content}`);
      return input.schema === undefined ? r.content : JSON.parse(r.content);
    },
    put: (path, content) => call("Write", { file_path: abs(path), content: String(content) }),
    chdir: (dir) => { cwd = abs(dir); return cwd; },
    shQuote,
    str: show,
    console: {
      log: (...a) => write(out, a), info: (...a) => write(out, a), debug: (...a) => write(out, a),
      warn: (...a) => write(err, a), error: (...a) => write(err, a),
    },
    setTimeout: (fn, ms, ...args) => {
      const id = ++timerSeq;
      timers.push({ id, due: Date.now() + Math.max(0, Number(ms) || 0), fn, args });
      return id;
    },
    clearTimeout: (id) => { timers = timers.filter((t) => t.id !== id); },
    btoa: (s) => {
      const t = String(s), a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
      let o = "";
      for (let i = 0; i < t.length; i += 3) {
        const c = [t.charCodeAt(i), t.charCodeAt(i + 1), t.charCodeAt(i + 2)];
        if (c.some((x) => x > 255)) throw new Error("btoa: a character outside Latin-1");
        const n = (c[0] << 16) | ((c[1] || 0) << 8) | (c[2] || 0);
        o += a[(n >> 18) & 63] + a[(n >> 12) & 63] + (i + 1 < t.length ? a[(n >> 6) & 63] : "=") + (i + 2 < t.length ? a[n & 63] : "=");
      }
      return o;
    },
    atob: (s) => {
      const a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
      const t = String(s).replace(/[\s=]+/g, "");
      let o = "", bits = 0, n = 0;
      for (const ch of t) {
        const v = a.indexOf(ch);
        if (v < 0) throw new Error("atob: not base64");
        n = (n << 6) | v; bits += 6;
        if (bits >= 8) { bits -= 8; o += String.fromCharCode((n >> bits) & 255); }
      }
      return o;
    },
  };
  defs.clearInterval = defs.clearTimeout;

  defs.registerTool = (name, description, schema, handler) => {
    name = String(name);
    if (!/^[a-zA-Z0-9_-]{1,111}$/.test(name)) {
      throw new Error("registerTool: a name is 1 to 111 letters, digits, '_' or '-'");
    }
    if (typeof handler !== "function") throw new Error("registerTool: the handler must be a function");
    if (Object.prototype.hasOwnProperty.call(defs, name) || managed.has(name)) {
      throw new Error(`registerTool: ${name} is already a global of the REPL`);
    }
    let s;
    try { s = JSON.parse(JSON.stringify(schema === undefined ? { type: "object" } : schema)); } catch (_) { s = undefined; }
    if (s === null || typeof s !== "object" || Array.isArray(s)) {
      throw new Error("registerTool: the schema must be a JSON-serialisable object");
    }
    if (s.type === undefined) s.type = "object";
    if (s.type !== "object") throw new Error("registerTool: the schema must describe an object");
    if (s.properties === undefined) s.properties = {};
    const problem = __schema_problem(name, JSON.stringify(s));
    if (problem !== null) throw new Error(`registerTool: ${problem}`);
    const d = description === undefined ? "" : String(description);
    registered.set(name, { description: d, schema: s, handler });
    changes.push({ op: "register", name, description: d, schema: s });
    return `eval_registered__${name}`;
  };
  defs.unregisterTool = (name) => {
    name = String(name);
    const had = registered.delete(name);
    if (had) changes.push({ op: "unregister", name });
    return had;
  };
  defs.listTools = () => [...registered.keys()];
  defs.getTool = (name) => {
    const t = registered.get(String(name));
    return t === undefined ? undefined : { name: String(name), description: t.description, schema: t.schema };
  };

  const install = (name, value) => {
    const d = Object.getOwnPropertyDescriptor(G, name);
    if (d && !d.configurable) return name;
    Object.defineProperty(G, name, { value, writable: true, configurable: true, enumerable: false });
    managed.add(name);
    return null;
  };

  // An un-awaited promise used as text or a number is an error, not "[object Promise]".
  Object.defineProperty(Promise.prototype, Symbol.toPrimitive, {
    value() { throw new TypeError("a Promise was used as a value (in text or arithmetic): await it first"); },
    configurable: false, writable: false,
  });

  // Before each call: the managed globals again, `o` empty, the cwd the
  // session's, the console and timers clear. Answers the name of a
  // managed global user code made non-configurable (the context is then
  // poisoned), else null.
  G.__refresh = (toolsJson, dir) => {
    out = []; err = []; consoleBytes = 0; consoleFull = false; timers = []; changes = [];
    cwd = dir; sessionCwd = dir;
    for (const [k, v] of Object.entries(defs)) { const bad = install(k, v); if (bad) return bad; }
    for (const name of JSON.parse(toolsJson)) {
      const bad = install(name, (input) => call(name, input));
      if (bad) return bad;
    }
    const bad = install("o", {});
    return bad;
  };

  // Resolves thenables inside arrays and plain objects, as a returned value.
  const deep = async (x, depth) => {
    if (x !== null && (typeof x === "object" || typeof x === "function") && typeof x.then === "function") x = await x;
    if (depth > 32 || x === null || typeof x !== "object") return x;
    if (Array.isArray(x)) { const r = []; for (const e of x) r.push(await deep(e, depth + 1)); return r; }
    if (Object.getPrototypeOf(x) !== Object.prototype) return x;
    const r = {};
    for (const k of Object.keys(x)) r[k] = await deep(x[k], depth + 1);
    return r;
  };

  let settled = null;
  G.__settle = (v) => {
    settled = null;
    if (v === undefined) v = G.o;
    // A promise (an awaiting block) that settles to nothing gives `o` too.
    deep(v, 0).then((x) => { settled = { ok: true, value: show(x === undefined ? G.o : x) }; },
      (e) => { settled = { ok: false, value: e instanceof Error ? `${e.name}: ${e.message}` : `thrown: ${show(e)}` }; });
  };

  // One pending timer run (waiting for it); false when none is left.
  G.__tick = () => {
    if (settled !== null || timers.length === 0) return false;
    timers.sort((a, b) => a.due - b.due);
    const t = timers.shift();
    const wait = t.due - Date.now();
    if (wait > 0) __sleep(wait);
    t.fn(...t.args);
    return true;
  };

  G.__outcome = () => {
    const r = settled === null
      ? { ok: false, value: "the script's promise never settled (it waits for something that will not happen)" }
      : settled;
    timers = [];
    return JSON.stringify({ ok: r.ok, value: r.value, stdout: out.join(""), stderr: err.join(""), changes });
  };

  // A model's call of a registered tool: its handler, in this realm.
  G.__invoke = (name, inputJson) => {
    const t = registered.get(name);
    if (t === undefined) throw new Error(`no tool ${name} is registered in this REPL context`);
    return t.handler(JSON.parse(inputJson));
  };

  G.__thrown = (e) => JSON.stringify({
    ok: false, value: e instanceof Error ? `${e.name}: ${e.message}` : `thrown: ${show(e)}`,
    stdout: out.join(""), stderr: err.join(""), changes,
  });
})();
