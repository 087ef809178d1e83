// A throw-away Redis Cluster for the JS tests: six redis-servers (three masters, one replica each)
// joined by `redis-cli --cluster create`, and an edgelimit gateway in front of it (`--redis-cluster`,
// EDGELIMIT_GATEWAY_BIN as scripts/with_gateway.sh exports it). Every node has the Redis ACL user of
// gateway/README.md from its start (an ACL file), and the gateway connects as it, as operators run it.
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import { gatewayAclFileLine } from "../../scripts/gateway_acl.mjs";
import { freePort, processGroup, until } from "../../scripts/regions.mjs";

const run = promisify(execFile);

/**
 * A free loopback port for a cluster node, whose cluster bus listens 10,000 ports higher: at most 55535
 * (redis-server refuses to start above), with that bus port free too.
 */
async function freeClusterPort() {
  for (;;) {
    const port = await freePort();
    if (port <= 55_535 && (await isFree(port + 10_000))) return port;
  }
}

/** Whether nothing listens on loopback `port`. */
function isFree(port) {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** `redis-cli -p port ...args` as the `default` user: its output, trimmed. */
async function cli(port, ...args) {
  const { stdout } = await run("redis-cli", ["-p", String(port), ...args]);
  return stdout.trim();
}

/**
 * Starts the cluster and the gateway. Returns `{ url, token, masters(), dbsize(port), close() }`: the
 * gateway's URL and token, the ports of the masters, a node's key count, and the end of it all.
 * Whatever is still running when the process exits is killed then.
 */
export async function startCluster() {
  const gatewayBin = process.env.EDGELIMIT_GATEWAY_BIN;
  if (!gatewayBin) throw new Error("EDGELIMIT_GATEWAY_BIN is not set (run under scripts/with_gateway.sh)");
  const { dir, start, close } = processGroup("edgelimit-cluster-");
  try {
    const password = randomBytes(12).toString("hex");
    const aclFile = join(dir, "users.acl");
    writeFileSync(aclFile, gatewayAclFileLine(password));
    const ports = [];
    for (let i = 0; i < 6; i++) ports.push(await freeClusterPort());
    for (const port of ports) {
      start("redis-server", [
        "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
        "--cluster-enabled", "yes", "--cluster-config-file", join(dir, `nodes-${port}.conf`),
        "--cluster-node-timeout", "5000", "--repl-diskless-sync-delay", "0",
        "--dir", dir, "--aclfile", aclFile,
      ]);
    }
    for (const port of ports) await until(`redis-server ${port}`, async () => (await cli(port, "PING")) === "PONG");
    await run("redis-cli", ["--cluster", "create", ...ports.map((port) => `127.0.0.1:${port}`), "--cluster-replicas", "1", "--cluster-yes"]);
    for (const port of ports) {
      await until(`cluster_state:ok on ${port}`, async () => (await cli(port, "CLUSTER", "INFO")).includes("cluster_state:ok"));
    }

    const token = randomBytes(12).toString("hex");
    const seeds = ports.map((port) => `redis://gateway:${password}@127.0.0.1:${port}`).join(",");
    const gatewayPort = await freePort();
    const gateway = start(gatewayBin, ["--listen", `127.0.0.1:${gatewayPort}`, "--redis-cluster", seeds, "--token", token], ["ignore", "ignore", "pipe"]);
    let log = "";
    gateway.stderr.on("data", (chunk) => (log = (log + chunk).slice(-4000)));
    const url = `http://127.0.0.1:${gatewayPort}`;
    const exited = new Promise((_, reject) => gateway.once("exit", (code) => reject(new Error(`the gateway exited (${code}): ${log}`))));
    exited.catch(() => {});
    await Promise.race([until("the gateway", async () => (await fetch(`${url}/readyz`)).ok), exited]);

    return {
      url,
      token,
      async masters() {
        const roles = await Promise.all(ports.map((port) => cli(port, "ROLE")));
        return ports.filter((_, i) => roles[i].startsWith("master"));
      },
      async dbsize(port) {
        return Number(await cli(port, "DBSIZE"));
      },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
