// Shared helpers for the node peers: env, a tiny RESP client for INFO/RESETSTAT, checks.
import net from "node:net";

export function env(name) {
  const v = process.env[name];
  if (!v) throw new Error(`missing env ${name}`);
  return v;
}

/** Sends one inline command to redis on 127.0.0.1:port and returns the raw reply text. */
export function redisRaw(port, line) {
  return new Promise((resolve, reject) => {
    const sock = net.createConnection({ host: "127.0.0.1", port: Number(port) });
    let data = "";
    const timer = setTimeout(() => { sock.destroy(); reject(new Error("redis timeout")); }, 5000);
    sock.on("data", (chunk) => {
      data += chunk.toString("utf8");
      // +OK / -ERR / :n are one line; $len\r\n<payload>\r\n is a bulk string.
      const m = /^\$(\d+)\r\n/.exec(data);
      const done = m ? data.length >= m[0].length + Number(m[1]) + 2 : data.endsWith("\r\n");
      if (done) { clearTimeout(timer); sock.end(); resolve(data); }
    });
    sock.on("error", (e) => { clearTimeout(timer); reject(e); });
    sock.write(line + "\r\n");
  });
}

/** Parses `INFO commandstats` into { name: {calls, failed_calls, rejected_calls} }. */
export async function commandStats(port) {
  const text = await redisRaw(port, "INFO commandstats");
  const stats = {};
  for (const line of text.split("\r\n")) {
    const m = /^cmdstat_([^:]+):(.*)$/.exec(line);
    if (!m) continue;
    const fields = Object.fromEntries(m[2].split(",").map((kv) => kv.split("=")));
    stats[m[1]] = {
      calls: Number(fields.calls ?? 0),
      failed: Number(fields.failed_calls ?? 0),
      rejected: Number(fields.rejected_calls ?? 0),
    };
  }
  return stats;
}

export async function resetStats(port) {
  const r = await redisRaw(port, "CONFIG RESETSTAT");
  if (!r.startsWith("+OK")) throw new Error(`CONFIG RESETSTAT: ${r}`);
}

let failures = 0;
export function check(name, cond, detail = "") {
  if (cond) {
    console.log(`ok ${name}`);
  } else {
    failures += 1;
    console.log(`FAIL ${name} ${detail}`);
  }
}

export function finish() {
  if (failures > 0) {
    console.log(`${failures} check(s) failed`);
    process.exit(1);
  }
  console.log("all checks passed");
}
