// The REPL's managed globals, installed once when a context starts and
// refreshed (__refresh) before every call. Host functions: __host(name,
// json) runs one inner tool call through the permission pipeline and
// answers {content, is_error}; __sleep(ms) waits (timers).
(function () {
  "use strict";
  const G = globalThis;
  const managed = new Set();
  let out = [], err = [], consoleBytes = 0, consoleFull = false;
  const CONSOLE_LIMIT = 52428800;
  let cwd = "", sessionCwd = "";
  let timers = [], timerSeq = 0;

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

  // Read numbers its lines ("     1\tline"); the shorthand hands back the text.
  const unnumber = (text) =>
    text.split("\n").filter((l, i, all) => !(i === all.length - 1 && l === ""))
      .map((l) => { const m = /^\s*\d+\t/.exec(l); return m ? l.slice(m[0].length) : l; })
      .join("\n");

  const lines = (text) => text.split("\n").filter((l) => l !== "" && !l.startsWith("No files found"));

  const defs = {
    sh: (command, opts) => {
      const c = cwd !== sessionCwd && cwd !== "" ? `cd ${shQuote(cwd)} && ${command}` : String(command);
      return call("Bash", Object.assign({ command: c }, opts || {}));
    },
    cat: (path, opts) => unnumber(call("Read", Object.assign({ file_path: abs(path) }, opts || {}))),
    rg: (pattern, path, opts) => call("Grep", Object.assign(
      { pattern: String(pattern), output_mode: "content", "-n": true },
      path === undefined ? {} : { path: abs(path) }, opts || {})),
    rgf: (pattern, path, opts) => lines(call("Grep", Object.assign(
      { pattern: String(pattern), output_mode: "files_with_matches" },
      path === undefined ? {} : { path: abs(path) }, opts || {}))),
    gl: (pattern, path) => lines(call("Glob", Object.assign(
      { pattern: String(pattern) }, path === undefined ? {} : { path: abs(path) }))),
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
    out = []; err = []; consoleBytes = 0; consoleFull = false; timers = [];
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
    deep(v, 0).then((x) => { settled = { ok: true, value: show(x) }; },
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
    return JSON.stringify({ ok: r.ok, value: r.value, stdout: out.join(""), stderr: err.join("") });
  };

  G.__thrown = (e) => JSON.stringify({
    ok: false, value: e instanceof Error ? `${e.name}: ${e.message}` : `thrown: ${show(e)}`,
    stdout: out.join(""), stderr: err.join(""),
  });
})();
