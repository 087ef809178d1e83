// Cloudflare Workers through wrangler 4 (on Node 22, which it needs): a plain Worker
// (tests/frameworks/workers/), a Hono app (tests/frameworks/hono/) and SvelteKit with adapter-cloudflare
// (tests/frameworks/sveltekit/, built by `vite build` first), each bundled by `wrangler deploy --dry-run`
// and served by `wrangler dev` (workerd), with edgelimit installed from its tarball, on Redis, in
// memory, and @upstash/ratelimit as the control.
//
//   bash scripts/with_gateway.sh node --test tests/frameworks/workers.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { assertLimited, assertRedisKeys, identifier } from "./checks.mjs";
import { NODE22_BIN, exec, freePort, prepareApp, startServer, withPath } from "./harness.mjs";

const skip =
  (!process.env.EDGELIMIT_TEST_URL && "EDGELIMIT_TEST_URL is not set (run under scripts/with_gateway.sh)") ||
  (!existsSync(join(NODE22_BIN, "node")) && `no Node.js 22 in ${NODE22_BIN}: run scripts/bootstrap.sh`);

const env = withPath(NODE22_BIN, { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "1" });

/** The apps: what builds them before wrangler, and where each variant answers. */
const APPS = [
  { name: "workers", build: [], routes: [{ path: "/", stored: true }, { path: "/memory", stored: false }, { path: "/peer", stored: true, peer: true }] },
  {
    name: "hono",
    build: [],
    routes: [
      { path: "/limited/hello", stored: true },
      { path: "/memory/limited/hello", stored: false },
      { path: "/peer/limited/hello", stored: true, peer: true },
    ],
  },
  {
    name: "sveltekit",
    build: ["vite", "build"],
    routes: [{ path: "/limited", stored: true }, { path: "/memory", stored: false }, { path: "/peer", stored: true, peer: true }],
  },
];

for (const { name, build, routes } of APPS) {
  test(`${name}: wrangler deploy --dry-run bundles the .wasm as a module, wrangler dev answers`, { skip, timeout: 600_000 }, async (t) => {
    const dir = await prepareApp(name, { source: name, env });
    if (build.length > 0) await exec("npx", build, { cwd: dir, env });
    await exec("npx", ["wrangler", "deploy", "--dry-run", "--outdir", "dist"], { cwd: dir, env });
    assert.deepEqual(
      readdirSync(join(dir, "dist")).filter((file) => file.endsWith(".wasm")).length,
      1,
      "the upload carries the .wasm as a module of its own",
    );

    const port = await freePort();
    const server = await startServer(
      "npx",
      [
        "wrangler", "dev", "--port", String(port), "--ip", "127.0.0.1",
        "--var", `UPSTASH_REDIS_REST_URL:${process.env.EDGELIMIT_TEST_URL}`,
        "--var", `UPSTASH_REDIS_REST_TOKEN:${process.env.EDGELIMIT_TEST_TOKEN}`,
      ],
      { cwd: dir, env, url: `http://127.0.0.1:${port}/favicon.ico` },
    );
    t.after(server.stop);
    for (const { path, stored, peer } of routes) {
      await t.test(path, async () => {
        const id = identifier(`${name}${path}`);
        await assertLimited(`http://127.0.0.1:${port}${path}`, { "cf-connecting-ip": id }, { peer });
        await assertRedisKeys(id, { stored });
      });
    }
  });
}
