// Section 7: the fault table. edgelimit's limiter (fixed window, `failMode: "closed"`) decides through the
// gateway while, in turn: Redis restarts, the gateway itself restarts (SIGTERM, a new process on the same
// port), Redis is kept busy past the gateway's --timeout-ms by a script that spins, the gateway's
// --max-connections are filled by idle connections, and a master of a Redis Cluster is killed. Per fault:
// decisions asked, how many failed and how (the HTTP replies behind them: 503, 504, no reply), the time from
// the fault to the first decision after the last failure, and, read back from Redis once it is over,
// whether any admitted decision is missing from its identifier's count, or any identifier was admitted over
// its limit. Every process here is started on loopback and stopped at the end.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { createConnection } from "node:net";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { gatewayAclFileLine } from "../../scripts/gateway_acl.mjs";
import { freePort, processGroup, until } from "../../scripts/regions.mjs";
import { Ratelimit, Redis, window } from "./libraries.mjs";

/** The limit of each identifier; a caller moves to a new identifier after twice that many decisions. */
const LIMIT = 20;
/** The gateway's --timeout-ms. */
const TIMEOUT_MS = 1000;
/** The gateway's --max-connections and --idle-timeout-ms. */
const MAX_CONNECTIONS = 64;
const IDLE_MS = 2000;
/** How long the script keeps Redis busy. */
const BUSY_MS = 2500;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** `read()` once it succeeds (the database may still be recovering), retried for at most 20 s. */
async function settled(read) {
  for (let attempt = 0; ; attempt++) {
    try {
      return await read();
    } catch (error) {
      if (attempt >= 200) throw error;
      await sleep(100);
    }
  }
}

/** Whether redis-server on `port` answers PING. */
function ping(port) {
  return new Promise((resolve) => {
    const socket = createConnection(port, "127.0.0.1");
    socket.once("error", () => resolve(false));
    socket.once("data", (data) => {
      socket.destroy();
      resolve(String(data).startsWith("+PONG"));
    });
    socket.write("PING\r\n");
  });
}

/** Runs redis-cli (as the `default` user) to its end; its stdout. */
function redisCli(args) {
  return new Promise((resolve, reject) => {
    const child = spawn("redis-cli", args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (chunk) => (out += chunk));
    child.stderr.on("data", (chunk) => (out += chunk));
    child.once("error", reject);
    child.once("exit", () => resolve(out.trim()));
  });
}

/** A free port whose cluster bus port (+10000) is free too. */
async function clusterPort() {
  for (;;) {
    const port = await freePort();
    if (port > 55_535) continue;
    const bus = await new Promise((resolve) => {
      const probe = createConnection(port + 10_000, "127.0.0.1");
      probe.once("connect", () => (probe.destroy(), resolve(false)));
      probe.once("error", () => resolve(true));
    });
    if (bus) return port;
  }
}

/** Starts a process and returns a handle that can stop it (SIGTERM or SIGKILL) and wait for its exit. */
function processes(group) {
  return (command, args) => {
    const child = group.start(command, args, ["ignore", "ignore", "pipe"]);
    let log = "";
    child.stderr.on("data", (chunk) => (log = (log + chunk).slice(-4000)));
    const exit = new Promise((resolve) => child.once("exit", resolve));
    return {
      log: () => log,
      async stop(signal = "SIGTERM") {
        child.kill(signal);
        await exit;
      },
    };
  };
}

/** Counts the HTTP replies behind the decisions: 503, 504 and requests that got no reply. */
function countingFetch() {
  const real = globalThis.fetch;
  const counts = { 503: 0, 504: 0, noReply: 0 };
  globalThis.fetch = async (input, init) => {
    try {
      const response = await real(input, init);
      if (response.status === 503 || response.status === 504) counts[response.status] += 1;
      return response;
    } catch (error) {
      counts.noReply += 1;
      throw error;
    }
  };
  return {
    take() {
      const taken = { ...counts };
      counts[503] = counts[504] = counts.noReply = 0;
      return taken;
    },
    restore: () => (globalThis.fetch = real),
  };
}

/**
 * One fault: `callers` decide without pause for `beforeMs`, then `inject()` runs the fault (resolving once
 * it is over: the server back, the script done), then they go on for `afterMs`. Then the counts are read
 * back through the same limiter.
 */
async function phase({ name, url, token, keys, callers, beforeMs, afterMs, inject, http, strict = true }) {
  const prefix = `faults:${randomBytes(4).toString("hex")}`;
  const limiter = new Ratelimit({
    redis: new Redis({ url, token }),
    limiter: Ratelimit.fixedWindow(LIMIT, window),
    prefix,
    keys,
    ephemeralCache: false,
    failMode: "closed",
    timeout: 3 * TIMEOUT_MS,
  });
  http.take();
  let stop = false;
  const admitted = new Map();
  const answers = []; // [end ms, failed]
  const failed = { timeout: 0, error: 0, rejected: 0 };
  let sent = 0;
  const caller = async (c) => {
    for (let n = 0; !stop; n++) {
      const id = `c${c}-${Math.floor(n / (2 * LIMIT))}`;
      sent += 1;
      let bad = true;
      try {
        const r = await limiter.limit(id);
        if (r.reason) failed[r.reason] = (failed[r.reason] ?? 0) + 1;
        else {
          bad = false;
          if (r.success) admitted.set(id, (admitted.get(id) ?? 0) + 1);
        }
      } catch {
        failed.rejected += 1;
      }
      answers.push([performance.now(), bad]);
      // A failure answered at once (connection refused) would spin: yield a little.
      if (bad) await sleep(5);
    }
  };
  const running = Array.from({ length: callers }, (_, c) => caller(c));
  await sleep(beforeMs);
  const faultAt = performance.now();
  await inject();
  const faultMs = performance.now() - faultAt;
  await sleep(afterMs);
  stop = true;
  await Promise.all(running);
  const replies = http.take();

  const lastFailure = Math.max(-Infinity, ...answers.filter(([, bad]) => bad).map(([at]) => at));
  const firstAfter = answers.find(([at, bad]) => !bad && at > lastFailure);
  const recoveredMs = lastFailure === -Infinity ? 0 : firstAfter ? firstAfter[0] - faultAt : null;

  let missing = 0;
  let overLimit = 0;
  let admittedAll = 0;
  for (const [id, count] of admitted) {
    admittedAll += count;
    const { remaining } = await settled(() => limiter.getRemaining(id));
    // Redis holds at least limit − remaining decisions of this identifier.
    missing += Math.max(0, count - (LIMIT - remaining));
    overLimit += Math.max(0, count - LIMIT);
  }
  const failedAll = failed.timeout + failed.error + failed.rejected;
  return {
    name,
    strict,
    sent,
    failed: failedAll,
    failModeTimeout: failed.timeout,
    failModeError: failed.error,
    rejected: failed.rejected,
    http503: replies[503],
    http504: replies[504],
    noReply: replies.noReply,
    faultMs: Math.round(faultMs),
    recoveredMs: recoveredMs === null ? null : Math.round(recoveredMs),
    admitted: admittedAll,
    identifiers: admitted.size,
    missing,
    overLimit,
  };
}

/** A redis-server with the gateway's ACL user and an append-only file synced on every write. */
function startRedis(start, dir, port, aclFile, extra = []) {
  return start("redis-server", [
    "--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "",
    "--appendonly", "yes", "--appendfsync", "always", "--appendfilename", `aof-${port}.aof`,
    "--appenddirname", `aof-${port}`, "--aclfile", aclFile, ...extra,
  ]);
}

/** Starts the gateway with `args` on `port` and waits for /healthz. */
async function startGateway(start, bin, port, args) {
  const gateway = start(bin, ["--listen", `127.0.0.1:${port}`, ...args]);
  await until("the gateway", async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok);
  return gateway;
}

/** Runs the section: one row per fault. */
export async function faultSection({ callers, beforeMs, afterMs, log }) {
  const bin = process.env.EDGELIMIT_GATEWAY_BIN;
  if (!bin) throw new Error("EDGELIMIT_GATEWAY_BIN is not set (run under scripts/with_gateway.sh)");
  const group = processGroup("edgelimit-faults-");
  const start = processes(group);
  const password = randomBytes(12).toString("hex");
  const aclFile = join(group.dir, "users.acl");
  writeFileSync(aclFile, gatewayAclFileLine(password));
  const token = `faults-${randomBytes(6).toString("hex")}`;
  const http = countingFetch();
  const rows = [];
  try {
    // One redis-server and the gateway in front of it.
    const redisPort = await freePort();
    let redis = startRedis(start, group.dir, redisPort, aclFile);
    await until("redis-server", () => ping(redisPort));
    const gatewayPort = await freePort();
    const gatewayArgs = [
      "--redis", `redis://gateway:${password}@127.0.0.1:${redisPort}`, "--token", token,
      "--timeout-ms", String(TIMEOUT_MS), "--max-connections", String(MAX_CONNECTIONS),
      "--idle-timeout-ms", String(IDLE_MS),
    ];
    let gateway = await startGateway(start, bin, gatewayPort, gatewayArgs);
    const url = `http://127.0.0.1:${gatewayPort}`;
    const common = { url, token, keys: "upstash", callers, beforeMs, afterMs, http };

    log("faults: Redis restart");
    rows.push(await phase({
      ...common,
      name: "Redis restarted (SIGTERM, same port, AOF kept)",
      inject: async () => {
        await redis.stop("SIGTERM");
        redis = startRedis(start, group.dir, redisPort, aclFile);
        await until("redis-server again", () => ping(redisPort));
      },
    }));

    log("faults: gateway restart");
    rows.push(await phase({
      ...common,
      name: "gateway restarted (SIGTERM, new process on the same port)",
      inject: async () => {
        await gateway.stop("SIGTERM");
        gateway = await startGateway(start, bin, gatewayPort, gatewayArgs);
      },
    }));

    log("faults: Redis slower than --timeout-ms");
    rows.push(await phase({
      ...common,
      name: `Redis busy ${BUSY_MS} ms (a script spinning) past --timeout-ms ${TIMEOUT_MS}`,
      inject: () =>
        redisCli([
          "-p", String(redisPort), "EVAL",
          `local t = redis.call('TIME') local s = t[1] * 1000 + t[2] / 1000
           repeat local n = redis.call('TIME') until n[1] * 1000 + n[2] / 1000 - s > ${BUSY_MS}
           return 1`,
          "0",
        ]),
    }));

    log("faults: --max-connections filled");
    rows.push(await phase({
      ...common,
      name: `--max-connections ${MAX_CONNECTIONS} filled by idle connections (closed after --idle-timeout-ms ${IDLE_MS})`,
      inject: async () => {
        const sockets = Array.from({ length: MAX_CONNECTIONS }, () => {
          const socket = createConnection(gatewayPort, "127.0.0.1");
          socket.on("error", () => {});
          return socket;
        });
        // The gateway closes them once idle; wait for that (or give up after three times as long).
        const closed = sockets.map((socket) => new Promise((resolve) => socket.once("close", resolve)));
        await Promise.race([Promise.all(closed), sleep(3 * IDLE_MS)]);
        for (const socket of sockets) socket.destroy();
      },
    }));

    // A Redis Cluster of three masters and three replicas, and a gateway in front of it.
    log("faults: starting a Redis Cluster");
    const ports = [];
    while (ports.length < 6) {
      const port = await clusterPort();
      if (!ports.includes(port)) ports.push(port);
    }
    const nodes = new Map();
    for (const port of ports) {
      nodes.set(port, start("redis-server", [
        "--port", String(port), "--bind", "127.0.0.1", "--dir", group.dir, "--save", "", "--appendonly", "no",
        "--cluster-enabled", "yes", "--cluster-config-file", `nodes-${port}.conf`, "--cluster-node-timeout", "1000",
        // A replica takes over however long ago it last heard from its master (a fresh cluster's replica
        // may still be in its first sync).
        "--cluster-replica-validity-factor", "0",
        "--aclfile", aclFile,
      ]));
    }
    for (const port of ports) await until(`cluster node ${port}`, () => ping(port));
    await redisCli(["--cluster", "create", ...ports.map((p) => `127.0.0.1:${p}`), "--cluster-replicas", "1", "--cluster-yes"]);
    const clusterOk = async (port) => (await redisCli(["-p", String(port), "CLUSTER", "INFO"])).includes("cluster_state:ok");
    for (const port of ports) await until(`cluster state ok on ${port}`, () => clusterOk(port));
    // Every replica in sync with its master before anything is killed.
    const synced = async (port) => {
      const info = await redisCli(["-p", String(port), "INFO", "replication"]);
      return info.includes("role:master") || info.includes("master_link_status:up");
    };
    for (const port of ports) await until(`replica ${port} in sync`, () => synced(port));
    const clusterGatewayPort = await freePort();
    await startGateway(start, bin, clusterGatewayPort, [
      "--redis-cluster", ports.slice(0, 3).map((p) => `redis://gateway:${password}@127.0.0.1:${p}`).join(","),
      "--token", token, "--timeout-ms", String(TIMEOUT_MS),
    ]);

    log("faults: cluster master killed");
    rows.push(await phase({
      ...common,
      url: `http://127.0.0.1:${clusterGatewayPort}`,
      keys: "cluster",
      strict: false,
      name: "Redis Cluster master killed (SIGKILL; cluster-node-timeout 1000 ms)",
      inject: async () => {
        // `<id> <ip:port@bus> <flags> …`, flags such as `myself,master` or `slave`.
        const masters = (await redisCli(["-p", String(ports[0]), "CLUSTER", "NODES"]))
          .split("\n")
          .map((line) => line.split(" "))
          .filter(([, , flags = ""]) => flags.split(",").includes("master") && !flags.includes("fail"))
          .map(([, address]) => Number(address.split("@")[0].split(":").pop()));
        const victim = masters[0];
        await nodes.get(victim).stop("SIGKILL");
        const live = ports.filter((p) => p !== victim);
        // Over once the dead master is marked failed, a replica has taken its slots (three masters alive
        // again) and every live node sees the cluster whole.
        const failedOver = async (port) => {
          const lines = (await redisCli(["-p", String(port), "CLUSTER", "NODES"])).split("\n").map((l) => l.split(" "));
          const dead = lines.find(([, address]) => address?.startsWith(`127.0.0.1:${victim}@`));
          const masters = lines.filter(([, , flags = ""]) => flags.split(",").includes("master") && !flags.includes("fail"));
          return dead?.[2]?.split(",").includes("fail") && masters.length === 3 && (await clusterOk(port));
        };
        for (const port of live) await until(`failover seen by ${port}`, () => failedOver(port));
      },
    }));
  } finally {
    http.restore();
    await group.close();
  }
  return { callers, beforeMs, afterMs, limit: LIMIT, timeoutMs: TIMEOUT_MS, rows };
}

/** The section as markdown. */
export function faultsMarkdown({ callers, beforeMs, afterMs, limit, timeoutMs, rows }) {
  const ms = (v) => (v === null ? "not recovered" : v === 0 ? "—" : `${(v / 1000).toFixed(2)} s`);
  const body = rows.map((r) => [
    r.name,
    r.sent,
    r.failed,
    `${r.failModeTimeout} / ${r.failModeError} / ${r.rejected}`,
    `${r.http503} / ${r.http504} / ${r.noReply}`,
    `${(r.faultMs / 1000).toFixed(2)} s`,
    ms(r.recoveredMs),
    `${r.admitted} (${r.identifiers} ids)`,
    `**${r.missing}**`,
    `**${r.overLimit}**`,
  ]);
  const header = ["fault", "decisions", "failed", "fail mode timeout / error / rejected", "HTTP 503 / 504 / no reply", "fault lasted", "recovered after", "admitted", "missing from count", "over limit"];
  const line = (cells) => `| ${cells.join(" | ")} |`;
  return `## 7. Fault table

edgelimit's fixed window (limit ${limit} per identifier, \`failMode: "closed"\`, timeout ${3 * timeoutMs} ms) through the
gateway (\`--timeout-ms ${timeoutMs}\`), ${callers} callers deciding without pause, each moving to a new identifier every
${2 * limit} decisions; ${beforeMs} ms of traffic, the fault, ${afterMs} ms more. "failed": decisions the fail mode
answered (a 5xx or no reply: denied, with \`reason\`) or that threw. "recovered after": from the fault's start to the
first decision after the last failure. "missing from count": admitted decisions the identifier's count in Redis
does not hold afterwards; "over limit": admitted beyond the limit (both must be 0).

${line(header)}
${line(header.map(() => "---"))}
${body.map(line).join("\n")}`;
}
