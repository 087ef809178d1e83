// Leases in the runtimes where they matter most, with the unchanged pkg/: workerd (through miniflare),
// where a Worker isolate keeps its leases between requests and returns them through `ctx.waitUntil`,
// and Deno. Both against the real gateway; what the decisions left in Redis is read back with the
// real @upstash/redis.
//
//   bash scripts/with_gateway.sh node --test tests/js/lease_runtimes.test.mjs
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { Redis as UpstashRedis } from "@upstash/redis";
import { Miniflare } from "miniflare";
import { bundleWorker, workerOptions } from "../../scripts/bundle_worker.mjs";
import { linkPackage } from "../../scripts/link_pkg.mjs";

const root = fileURLToPath(new URL("../../", import.meta.url));
const here = fileURLToPath(new URL(".", import.meta.url));
const url = process.env.EDGELIMIT_TEST_URL;
const token = process.env.EDGELIMIT_TEST_TOKEN;
const skip = !url && "EDGELIMIT_TEST_URL is not set (run under scripts/with_gateway.sh)";
const DAY = 86_400_000;

linkPackage(here);
const scratch = mkdtempSync(join(tmpdir(), "edgelimit-lease-runtimes-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

const prefixOf = (runtime) => `edgelimit-lease-${runtime}-${Date.now()}-${Math.random().toString(36).slice(2)}`;
const redis = () => new UpstashRedis({ url, token, enableTelemetry: false });
/** The count of today's fixed window of `prefix`'s identifier "hot" (a day long, ending at midnight UTC). */
const counted = async (prefix) => Number((await redis().get(`${prefix}:hot:${Math.floor(Date.now() / DAY)}`)) ?? 0);

/** Polls `check` every 50 ms until it holds, failing after 10 s. */
async function eventually(what, check) {
  for (let i = 0; i < 200; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.fail(`${what} did not happen within 10 s`);
}

test("a Worker isolate keeps its leases between requests and returns them through waitUntil", { skip }, async () => {
  const outfile = join(scratch, "lease_worker.bundle.mjs");
  await bundleWorker(join(here, "lease_worker.mjs"), outfile);
  const miniflare = new Miniflare(workerOptions(outfile));
  try {
    const prefix = prefixOf("workerd");
    const send = async (body) => {
      const response = await miniflare.dispatchFetch("http://worker.test/", { method: "POST", body: JSON.stringify({ url, token, prefix, ...body }) });
      const text = await response.text();
      assert.equal(response.status, 200, text);
      return JSON.parse(text);
    };
    const first = await send({ decisions: 50 });
    assert.equal(first.runtime, "Cloudflare-Workers");
    assert.equal(first.admitted, 50);
    // The second request is answered from the leases the first left in the isolate.
    const second = await send({ decisions: 50 });
    assert.equal(second.admitted, 50);
    assert.ok(second.requests <= 2, `${second.requests} HTTP requests for 50 decisions`);
    assert.ok(first.requests + second.requests <= 10, `${first.requests} + ${second.requests} HTTP requests for 100 decisions`);
    const held = await counted(prefix);
    assert.ok(held > 100, `the lease is counted in Redis: ${held}`);
    // A request that only returns the leases, through waitUntil: Redis then counts what was admitted.
    await send({ decisions: 0, returnLeases: true });
    await eventually("the leases returned", async () => (await counted(prefix)) === 100);
  } finally {
    await miniflare.dispose();
  }
});

test("Deno leases through the `deno` condition and returns its leases", { skip }, async (t) => {
  const prefix = prefixOf("deno");
  const deno = join(root, "node_modules/.bin/deno");
  const args = [
    "run", "--no-config", "--no-lock", "--cached-only", "--node-modules-dir=manual",
    `--allow-net=${new URL(url).host}`, `--allow-read=${join(root, "pkg")}`,
    "lease_cli.mjs", JSON.stringify({ url, token, prefix, decisions: 500 }),
  ];
  const env = { ...process.env, DENO_DIR: join(scratch, "deno"), DENO_NO_UPDATE_CHECK: "1" };
  const { stdout } = await promisify(execFile)(deno, args, { cwd: here, env, signal: t.signal, timeout: 60_000 });
  const result = JSON.parse(stdout.trim().split("\n").at(-1));
  assert.match(result.runtime, /^Deno\//);
  assert.equal(result.entry, new URL("../../pkg/index.web.js", import.meta.url).href);
  assert.equal(result.admitted, 500);
  assert.ok(result.requests / 500 <= 0.1, `${result.requests} HTTP requests for 500 decisions`);
  assert.equal(await counted(prefix), 500, "every unused unit returned");
});
