// Bun: the server of tests/frameworks/bun/ run three ways, with edgelimit installed from its tarball:
// `bun run` (the `bun` condition, the .wasm read where the package is installed), `bun build
// --target=bun` (the .wasm carried beside the bundle) and `bun build --compile` (the .wasm embedded in
// the executable), the last two run from another folder than the one they were built in.
//
//   bash scripts/with_gateway.sh node --test tests/frameworks/bun.test.mjs
import { test } from "node:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { assertLimited, assertRedisKeys, identifier } from "./checks.mjs";
import { exec, freePort, prepareApp, startServer } from "./harness.mjs";

const skip = !process.env.EDGELIMIT_TEST_URL && "EDGELIMIT_TEST_URL is not set (run under scripts/with_gateway.sh)";

const ROUTES = [
  { path: "/", stored: true },
  { path: "/memory", stored: false },
  { path: "/peer", stored: true, peer: true },
];

/** How each way is built (in the app's folder) and started (in `cwd`). */
const WAYS = [
  { name: "bun run", build: [], start: (dir) => [join(dir, "node_modules/.bin/bun"), ["run", join(dir, "server.js")]] },
  {
    name: "bun build --target=bun",
    build: ["build", "--target=bun", "server.js", "--outdir", "out"],
    start: (dir) => [join(dir, "node_modules/.bin/bun"), [join(dir, "out/server.js")]],
  },
  {
    name: "bun build --compile",
    build: ["build", "--compile", "server.js", "--outfile", "out/server"],
    start: (dir) => [join(dir, "out/server"), []],
  },
];

test("Bun runs, bundles and compiles a server that uses the package", { skip, timeout: 600_000 }, async (t) => {
  const dir = await prepareApp("bun", { source: "bun" });
  const elsewhere = mkdtempSync(join(tmpdir(), "edgelimit-bun-"));
  t.after(() => rmSync(elsewhere, { recursive: true, force: true }));
  for (const way of WAYS) {
    await t.test(way.name, async (t) => {
      rmSync(join(dir, "out"), { recursive: true, force: true });
      if (way.build.length > 0) await exec(join(dir, "node_modules/.bin/bun"), way.build, { cwd: dir });
      const port = await freePort();
      const [command, args] = way.start(dir);
      const server = await startServer(command, args, {
        cwd: elsewhere,
        env: {
          ...process.env,
          PORT: String(port),
          UPSTASH_REDIS_REST_URL: process.env.EDGELIMIT_TEST_URL,
          UPSTASH_REDIS_REST_TOKEN: process.env.EDGELIMIT_TEST_TOKEN,
        },
        url: `http://127.0.0.1:${port}/favicon.ico`,
      });
      t.after(server.stop);
      for (const { path, stored, peer } of ROUTES) {
        const id = identifier(`bun-${way.name}${path}`);
        await assertLimited(`http://127.0.0.1:${port}${path}`, { "x-forwarded-for": id }, { peer });
        await assertRedisKeys(id, { stored });
      }
    });
  }
});
