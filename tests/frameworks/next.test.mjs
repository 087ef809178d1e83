// Next.js 15 and 16, webpack and Turbopack: the app of tests/frameworks/next/ built with `next build`
// and served by `next start`, with no configuration, edgelimit installed from its tarball. Each build
// serves an edge and a Node route handler (on Redis and in memory), a guard in front of a page
// (middleware.ts on the edge, or Next 16's proxy.ts on Node), and @upstash/ratelimit's routes as the
// control.
//
//   bash scripts/with_gateway.sh node --test tests/frameworks/next.test.mjs
import { test } from "node:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { assertLimited, assertRedisKeys, identifier } from "./checks.mjs";
import { exec, freePort, prepareApp, startServer } from "./harness.mjs";

const skip = !process.env.EDGELIMIT_TEST_URL && "EDGELIMIT_TEST_URL is not set (run under scripts/with_gateway.sh)";

/** The builds: each Next.js major with each bundler, and each guard file where that major has it. */
const BUILDS = [
  { version: 15, bundler: "webpack", args: [], guard: "middleware.ts" },
  { version: 15, bundler: "turbopack", args: ["--turbopack"], guard: "middleware.ts" },
  { version: 16, bundler: "turbopack", args: [], guard: "middleware.ts" },
  { version: 16, bundler: "webpack", args: ["--webpack"], guard: "proxy.ts" },
];

/** The routes of the app: path, whether its limit is kept in Redis, and whether the peer answers it. */
const ROUTES = [
  { path: "/edge", stored: true },
  { path: "/node", stored: true },
  { path: "/memory/edge", stored: false },
  { path: "/memory/node", stored: false },
  { path: "/guarded", stored: true },
  { path: "/peer/edge", stored: true, peer: true },
  { path: "/peer/node", stored: true, peer: true },
];

/**
 * The environment of the builds: without Upstash's variables, as a build that keeps its secrets for
 * run time has it (`Redis.fromEnv()` at module scope must still build, as the peer's does).
 */
const env = { ...process.env, NEXT_TELEMETRY_DISABLED: "1" };
for (const name of ["UPSTASH_REDIS_REST_URL", "UPSTASH_REDIS_REST_TOKEN", "KV_REST_API_URL", "KV_REST_API_TOKEN"]) delete env[name];
/** The environment of the servers: the gateway's address as Upstash's variables name it. */
const runtime = { ...env, UPSTASH_REDIS_REST_URL: process.env.EDGELIMIT_TEST_URL, UPSTASH_REDIS_REST_TOKEN: process.env.EDGELIMIT_TEST_TOKEN };

for (const { version, bundler, args, guard } of BUILDS) {
  test(`Next.js ${version} with ${bundler}: next build, next start, edge and Node routes and ${guard}`, { skip, timeout: 900_000 }, async (t) => {
    const dir = await prepareApp(`next${version}`, { source: "next", lock: `next/${version}`, env });
    rmSync(join(dir, guard === "proxy.ts" ? "middleware.ts" : "proxy.ts"));
    await exec("npx", ["next", "build", ...args], { cwd: dir, env });

    const port = await freePort();
    const server = await startServer("npx", ["next", "start", "--port", String(port), "--hostname", "127.0.0.1"], {
      cwd: dir,
      env: runtime,
      url: `http://127.0.0.1:${port}/node`,
    });
    t.after(server.stop);
    for (const { path, stored, peer } of ROUTES) {
      await t.test(path, async () => {
        const id = identifier(`next${version}-${bundler}${path}`);
        await assertLimited(`http://127.0.0.1:${port}${path}`, { "x-forwarded-for": id }, { peer });
        await assertRedisKeys(id, { stored });
      });
    }
  });
}
