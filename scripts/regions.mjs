// Regions for multi-region tests, benchmarks and the playground: one throw-away redis-server per region
// behind one edgelimit gateway (EDGELIMIT_GATEWAY_BIN, as scripts/with_gateway.sh exports it), whose
// tokens file maps the token `region-<i>` to server i. Never one database twice. Each server has the
// Redis ACL user of gateway/README.md from its start (an ACL file), and the gateway connects as it,
// as operators run it.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gatewayAclFileLine } from "./gateway_acl.mjs";

/** A free loopback port. */
export async function freePort() {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Waits until `check()` resolves truthy, polling every 50 ms, for at most 15 s. */
export async function until(what, check) {
  for (let i = 0; i < 300; i++) {
    try {
      if (await check()) return;
    } catch {
      // not yet
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${what} did not happen within 15 s`);
}

/**
 * Processes started together and ended together, with a folder of theirs: `start(command, args, stdio?)`
 * spawns one, `close()` kills them all (SIGKILL), waits for their exits and removes the folder. Whatever
 * is still running when this process exits is killed then.
 */
export function processGroup(prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const children = new Set();
  const killAll = () => {
    for (const child of children) child.kill("SIGKILL");
  };
  process.once("exit", killAll);
  const start = (command, args, stdio = "ignore") => {
    const child = spawn(command, args, { stdio });
    children.add(child);
    child.once("exit", () => children.delete(child));
    return child;
  };
  const close = async () => {
    process.removeListener("exit", killAll);
    const exits = [...children].map((child) => new Promise((resolve) => child.once("exit", resolve)));
    killAll();
    await Promise.all(exits);
    rmSync(dir, { recursive: true, force: true });
  };
  return { dir, start, close };
}

/**
 * Starts `count` redis-servers and a gateway in front of them. Returns `{ url, tokens, stop(i),
 * restart(i), close() }`: the gateway's URL, the token of each region, and control of each server.
 * Whatever is still running when the process exits is killed then.
 */
export async function startRegions(count) {
  const gatewayBin = process.env.EDGELIMIT_GATEWAY_BIN;
  if (!gatewayBin) throw new Error("EDGELIMIT_GATEWAY_BIN is not set (run under scripts/with_gateway.sh)");
  const { dir, start, close } = processGroup("edgelimit-regions-");
  const ports = [];
  for (let i = 0; i < count; i++) ports.push(await freePort());
  const servers = [];
  // A restarted server (restart(i)) has the user too, before the gateway can reach it.
  const password = randomBytes(12).toString("hex");
  const aclFile = join(dir, "users.acl");
  writeFileSync(aclFile, gatewayAclFileLine(password));
  const startRedis = (i) => {
    servers[i] = start("redis-server", ["--port", String(ports[i]), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--aclfile", aclFile]);
  };
  const ping = async (i) => {
    const { createConnection } = await import("node:net");
    return new Promise((resolve) => {
      const socket = createConnection(ports[i], "127.0.0.1");
      socket.once("error", () => resolve(false));
      socket.once("data", (data) => {
        socket.destroy();
        resolve(String(data).startsWith("+PONG"));
      });
      socket.write("PING\r\n");
    });
  };
  for (let i = 0; i < count; i++) startRedis(i);
  for (let i = 0; i < count; i++) await until(`redis-server ${i}`, () => ping(i));

  const tokens = ports.map((_, i) => `region-${i}`);
  const file = join(dir, "tokens");
  writeFileSync(file, tokens.map((token, i) => `${token} redis://gateway:${password}@127.0.0.1:${ports[i]}\n`).join(""));
  const gatewayPort = await freePort();
  const gateway = start(gatewayBin, ["--listen", `127.0.0.1:${gatewayPort}`, "--tokens", file, "--timeout-ms", "1000"], ["ignore", "ignore", "pipe"]);
  let log = "";
  gateway.stderr.on("data", (chunk) => (log = (log + chunk).slice(-4000)));
  const url = `http://127.0.0.1:${gatewayPort}`;
  const exited = new Promise((_, reject) => gateway.once("exit", (code) => reject(new Error(`it exited (${code})`))));
  exited.catch(() => {});
  try {
    await Promise.race([until("the gateway", async () => (await fetch(`${url}/healthz`)).ok), exited]);
  } catch (error) {
    await close();
    throw new Error(`the gateway did not start: ${error.message}\n${log}`);
  }

  const stop = async (i) => {
    const server = servers[i];
    const exited = new Promise((resolve) => server.once("exit", resolve));
    server.kill("SIGKILL");
    await exited;
  };
  return {
    url,
    tokens,
    stop,
    async restart(i) {
      startRedis(i);
      await until(`redis-server ${i} again`, () => ping(i));
    },
    close,
  };
}
