// Regions for multi-region tests and benchmarks: one throw-away redis-server per region behind one
// edgelimit gateway (EDGELIMIT_GATEWAY_BIN, as scripts/with_gateway.sh exports it), whose tokens file
// maps the token `region-<i>` to server i. Never one database twice.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

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
 * Starts `count` redis-servers and a gateway in front of them. Returns `{ url, tokens, stop(i),
 * restart(i), close() }`: the gateway's URL, the token of each region, and control of each server.
 */
export async function startRegions(count) {
  const gatewayBin = process.env.EDGELIMIT_GATEWAY_BIN;
  if (!gatewayBin) throw new Error("EDGELIMIT_GATEWAY_BIN is not set (run under scripts/with_gateway.sh)");
  const dir = mkdtempSync(join(tmpdir(), "edgelimit-regions-"));
  const children = new Set();
  const start = (command, args) => {
    const child = spawn(command, args, { stdio: "ignore" });
    children.add(child);
    child.once("exit", () => children.delete(child));
    return child;
  };
  const ports = [];
  for (let i = 0; i < count; i++) ports.push(await freePort());
  const servers = [];
  const startRedis = (i) => {
    servers[i] = start("redis-server", ["--port", String(ports[i]), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]);
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
  writeFileSync(file, tokens.map((token, i) => `${token} redis://127.0.0.1:${ports[i]}\n`).join(""));
  const gatewayPort = await freePort();
  start(gatewayBin, ["--listen", `127.0.0.1:${gatewayPort}`, "--tokens", file, "--timeout-ms", "1000",
    // Throw-away redis-servers: their default user may run everything the gateway denies.
    "--unsafe-allow-admin"]);
  const url = `http://127.0.0.1:${gatewayPort}`;
  await until("the gateway", async () => (await fetch(`${url}/healthz`)).ok);

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
    async close() {
      const exits = [...children].map((child) => new Promise((resolve) => child.once("exit", resolve)));
      for (const child of children) child.kill("SIGKILL");
      await Promise.all(exits);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
