// Loaded with `node --require` by the MCP tests: servers started by the
// tests listen on 127.0.0.1 only, even when they were written to listen
// on every interface.
//
// Node looks a listen address up asynchronously, even an IP literal, so a
// server that reads `address().port` right after `listen()` (the
// conformance suite's do) would find nothing bound yet. While one of our
// own listens runs, the lookup of the loopback literal answers at once.
const net = require("net");
const dns = require("dns");
const LOOPBACK = "127.0.0.1";
let ours = false;
const lookup = dns.lookup;
dns.lookup = function (host, ...rest) {
  const cb = rest[rest.length - 1];
  if (ours && host === LOOPBACK && typeof cb === "function") {
    const all = typeof rest[0] === "object" && rest[0] !== null && rest[0].all;
    return all ? cb(null, [{ address: LOOPBACK, family: 4 }]) : cb(null, LOOPBACK, 4);
  }
  return lookup.call(this, host, ...rest);
};
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number" || (typeof args[0] === "string" && /^\d+$/.test(args[0]))) {
    if (typeof args[1] !== "string") args.splice(1, 0, LOOPBACK);
  } else if (args[0] && typeof args[0] === "object" && !args[0].host && args[0].port !== undefined) {
    args[0] = { ...args[0], host: LOOPBACK };
  }
  ours = true;
  try {
    return listen.apply(this, args);
  } finally {
    ours = false;
  }
};
