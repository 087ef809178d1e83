// Deno: `deno serve` of tests/frameworks/deno/, the packages in its node_modules (edgelimit from its
// tarball), through the `deno` condition: the .wasm fetched from the package's folder.
//
//   bash scripts/with_gateway.sh node --test tests/frameworks/deno.test.mjs
import { test } from "node:test";
import { join } from "node:path";
import { assertLimited, assertRedisKeys, identifier } from "./checks.mjs";
import { freePort, prepareApp, startServer } from "./harness.mjs";

const skip = !process.env.EDGELIMIT_TEST_URL && "EDGELIMIT_TEST_URL is not set (run under scripts/with_gateway.sh)";

const ROUTES = [
  { path: "/", stored: true },
  { path: "/memory", stored: false },
  { path: "/peer", stored: true, peer: true },
];

test("deno serve answers with the package from node_modules", { skip, timeout: 300_000 }, async (t) => {
  const dir = await prepareApp("deno", { source: "deno" });
  const port = await freePort();
  const gateway = new URL(process.env.EDGELIMIT_TEST_URL).host;
  // Offline: no lock file and nothing downloaded; the network to the gateway only.
  const args = [
    "serve", "--no-lock", "--cached-only", "--node-modules-dir=manual",
    "--port", String(port), "--host", "127.0.0.1",
    `--allow-net=${gateway},127.0.0.1:${port}`, "--allow-env", `--allow-read=${dir}`,
    "main.js",
  ];
  const server = await startServer(join(dir, "node_modules/.bin/deno"), args, {
    cwd: dir,
    env: {
      ...process.env,
      DENO_DIR: join(dir, ".deno"),
      DENO_NO_UPDATE_CHECK: "1",
      UPSTASH_REDIS_REST_URL: process.env.EDGELIMIT_TEST_URL,
      UPSTASH_REDIS_REST_TOKEN: process.env.EDGELIMIT_TEST_TOKEN,
    },
    url: `http://127.0.0.1:${port}/favicon.ico`,
  });
  t.after(server.stop);
  for (const { path, stored, peer } of ROUTES) {
    await t.test(path, async () => {
      const id = identifier(`deno${path}`);
      await assertLimited(`http://127.0.0.1:${port}${path}`, { "x-forwarded-for": id }, { peer });
      await assertRedisKeys(id, { stored });
    });
  }
});
