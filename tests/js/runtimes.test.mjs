// The runtime matrix: the unchanged pkg/ (from `bash scripts/build_pkg.sh`) in Node, Deno, workerd
// (through miniflare), Vercel's edge-runtime and Chromium, each importing it by its bare name as that
// runtime would and running tests/runtimes/scenario.mjs against a real gateway and redis-server, and
// `MultiRegionRatelimit` over two regions (two more redis-servers behind a gateway of their own,
// scripts/regions.mjs):
//
//   bash scripts/with_gateway.sh node --test tests/js/runtimes.test.mjs
//
// Each test asserts the exact decisions the runtime reports, which entry of the package it ran, what
// the runtime says it is, and, read back with the real @upstash/redis, the keys the decisions left in
// Redis and in each region: a runtime that fell back to the in-memory store or to another entry fails.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { runInContext } from "node:vm";
import { Redis as UpstashRedis } from "@upstash/redis";
import { EdgeRuntime } from "edge-runtime";
import * as esbuild from "esbuild";
import { Miniflare } from "miniflare";
import { bundleWorker, workerOptions } from "../../scripts/bundle_worker.mjs";
import { linkPackage } from "../../scripts/link_pkg.mjs";
import { startRegions } from "../../scripts/regions.mjs";

const root = fileURLToPath(new URL("../../", import.meta.url));
const pkgDir = join(root, "pkg");
const runtimesDir = join(root, "tests/runtimes");
const URL_ = process.env.EDGELIMIT_TEST_URL;
const TOKEN = process.env.EDGELIMIT_TEST_TOKEN;
const skip =
  (!URL_ && "EDGELIMIT_TEST_URL is not set (run under scripts/with_gateway.sh)") ||
  (!process.env.EDGELIMIT_GATEWAY_BIN && "EDGELIMIT_GATEWAY_BIN is not set (run under scripts/with_gateway.sh)");
const DAY = 86_400_000;

// Node, Deno and esbuild resolve the bare specifier "edgelimit" from tests/runtimes/ through
// tests/runtimes/node_modules/edgelimit, a link to pkg/, so each reads pkg/package.json.
linkPackage(runtimesDir);

const scratch = mkdtempSync(join(tmpdir(), "edgelimit-runtimes-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

/** Two regions for MultiRegionRatelimit: a redis-server each, behind one gateway (a token per region). */
let regions;
before(async () => {
  if (!skip) regions = await startRegions(2);
});
after(async () => {
  await regions?.close();
});

/** Options of one scenario run: a prefix of its own, so runs and runtimes never share keys. */
function options(runtime) {
  const prefix = `edgelimit-rt-${runtime}-${Date.now()}-${Math.random().toString(36).slice(2)}`;
  return { url: URL_, token: TOKEN, prefix, regions: { url: regions.url, tokens: regions.tokens } };
}

const decisions = (list) => list.map(({ success, remaining, limit, reason }) => ({ success, remaining, limit, reason }));
const allow = (remaining, limit) => ({ success: true, remaining, limit, reason: null });
const deny = (limit, reason = null) => ({ success: false, remaining: 0, limit, reason });

/** Asserts the scenario's decisions, then what they left in Redis. */
async function check(result, { prefix }, runtime) {
  assert.match(result.runtime, runtime, "the intended runtime ran the scenario");

  // Three admitted, the fourth denied by Redis, the fifth by the ephemeral cache without a request.
  assert.deepEqual(decisions(result.fixedWindow), [allow(2, 3), allow(1, 3), allow(0, 3), deny(3), deny(3, "cacheBlock")]);
  assert.deepEqual(result.getRemaining, { remaining: 0, limit: 3 });
  for (const name of ["slidingWindow", "tokenBucket", "gcra", "cachedFixedWindow"]) {
    assert.deepEqual(decisions(result[name]), [allow(1, 2), allow(0, 2), deny(2)], name);
  }
  // The set: admitted by both, then denied by the first and counted by neither (the quota's 4 left).
  const quota = { success: true, limit: 5, remaining: 4 };
  assert.deepEqual(result.set, [
    { success: true, limit: 1, remaining: 0, limits: [{ success: true, limit: 1, remaining: 0 }, quota] },
    { success: false, limit: 1, remaining: 0, limits: [{ success: false, limit: 1, remaining: 0 }, quota] },
  ]);
  assert.deepEqual(result.dryRun, [
    { success: true, reason: null, live: { success: true, remaining: 0 } },
    { success: true, reason: "dryRun", live: { success: false, remaining: 0 } },
  ]);
  for (const name of ["fixedWindow", "slidingWindow", "tokenBucket", "gcra", "cachedFixedWindow"]) {
    assert.ok(result[name].every((decision) => decision.pendingIsPromise), `${name}: pending is a Promise`);
  }
  const { reset } = result.fixedWindow[0];
  assert.ok(
    result.fixedWindow.every((decision) => decision.reset === reset),
    `one window's decisions name one reset: ${JSON.stringify(result.fixedWindow)}`,
  );
  assert.equal(reset % DAY, 0, "a fixed window ends at midnight UTC");
  assert.ok(reset > Date.now(), "the window has not ended");

  const redis = new UpstashRedis({ url: URL_, token: TOKEN, enableTelemetry: false });
  const window = reset / DAY - 1;
  const keys = {
    fixed: `${prefix}:fixed:user:${window}`,
    sliding: `${prefix}:sliding:user:${window}`,
    bucket: `${prefix}:bucket:user`,
    gcra: `${prefix}:gcra:user:gcra`,
    cached: `${prefix}:cached:user:${window}`,
    set: `${prefix}:set:user:${window}`,
    quota: `${prefix}:quota:user:${window}`,
    dry: `${prefix}:dry:user:${window}`,
  };
  assert.deepEqual((await redis.keys(`${prefix}:*`)).sort(), Object.values(keys).sort());
  assert.equal(await redis.get(keys.fixed), 4, "four requests reached Redis, denied ones counted");
  assert.equal(await redis.get(keys.sliding), 2, "a denied request writes nothing");
  assert.equal(await redis.hget(keys.bucket, "tokens"), 0);
  assert.deepEqual([await redis.get(keys.set), await redis.get(keys.quota)], [1, 1], "the denied call of the set is counted by neither");
  assert.equal(await redis.get(keys.dry), 2, "the dry run counts as live: denied ones counted");
  assert.ok((await redis.get(keys.gcra)) > Date.now() * 1000, "the theoretical arrival time is ahead");
  // The locally answered call's write lands through waitUntil, possibly after the response.
  await eventually("the cachedFixedWindow write in pending", async () => (await redis.get(keys.cached)) === 2);
  for (const key of Object.values(keys)) {
    assert.ok((await redis.pttl(key)) > 0, `${key} expires`);
  }
  await checkRegions(result.multiRegion, prefix, reset);
}

/**
 * Asserts MultiRegionRatelimit's one decision (the first of a limit of 3 a day) and that, once its
 * `pending` has merged, both regions hold the same one request id, of cost 1, in the day's window
 * (and nothing else under the run's prefix).
 */
async function checkRegions(decision, prefix, reset) {
  assert.deepEqual(decisions([decision]), [allow(2, 3)], "MultiRegionRatelimit's decision");
  assert.ok(decision.pendingIsPromise, "MultiRegionRatelimit: pending is a Promise");
  assert.equal(decision.reset, reset, "the same day's window as fixedWindow");
  const key = `${prefix}:regions:user:${reset / DAY - 1}`;
  const inRegions = regions.tokens.map((token) => new UpstashRedis({ url: regions.url, token, enableTelemetry: false }));
  // The region that answered holds the request at once; the other once the merge in pending lands.
  const held = async (region) => {
    const [keys, hash] = await Promise.all([region.keys(`${prefix}:*`), region.hgetall(key)]);
    return keys.length === 1 && keys[0] === key && hash !== null && Object.keys(hash).length === 1 ? hash : null;
  };
  await eventually("the request in both regions", async () => (await Promise.all(inRegions.map(held))).every(Boolean));
  const [first, second] = await Promise.all(inRegions.map(held));
  assert.deepEqual(second, first, "both regions hold the same request id");
  const [[id, cost]] = Object.entries(first);
  assert.match(id, /^[0-9a-f]{32}$/, "a request id");
  assert.equal(Number(cost), 1, "its cost");
  for (const region of inRegions) assert.ok((await region.pttl(key)) > 0, `${key} expires in every region`);
}

/** Polls `check` every 50 ms until it holds, failing after 10 s. */
async function eventually(what, check) {
  for (let i = 0; i < 200; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.fail(`${what} did not happen within 10 s`);
}

/** Runs a command in tests/runtimes/ to completion (killed if the test is cancelled); its last line of output as JSON. */
async function runJson(t, command, args, env = process.env) {
  const { stdout } = await promisify(execFile)(command, args, { cwd: runtimesDir, env, signal: t.signal, timeout: 60_000 });
  return JSON.parse(stdout.trim().split("\n").at(-1));
}

/**
 * Bundles tests/runtimes/`entry` under `conditions`, as wrangler (for workerd) and Vercel (for
 * edge-light) do; the `.wasm` import is left to `wasmPlugin`. Returns the bundle's path and the package
 * entries it took in.
 */
async function bundle(entry, { conditions, format, wasmPlugin }) {
  const outfile = join(scratch, `${basename(entry, ".mjs")}.bundle.${format === "esm" ? "mjs" : "js"}`);
  const { metafile } = await esbuild.build({
    entryPoints: [join(runtimesDir, entry)],
    absWorkingDir: root,
    bundle: true,
    platform: "neutral",
    conditions,
    format,
    outfile,
    metafile: true,
    logLevel: "error",
    plugins: [wasmPlugin],
  });
  return { outfile, entries: pkgEntries(metafile) };
}

/** The package entries (pkg/index.*.js) a bundle took in, from its esbuild metafile. */
function pkgEntries(metafile) {
  return Object.keys(metafile.inputs).filter((input) => /^pkg\/index\.\w+\.js$/.test(input));
}

test("every entry exports MultiRegionRatelimit beside the rest, and index.d.ts types each of them", async () => {
  // The entries as built (esbuild-minified), read rather than imported: the workerd entry imports a .wasm.
  const exported = (file) => {
    const source = readFileSync(join(pkgDir, file), "utf8");
    const names = [...source.matchAll(/export\s*\{([^}]*)\}/g)].flatMap(([, list]) => list.split(",").map((name) => name.trim()));
    return names.filter(Boolean).sort();
  };
  const entries = ["index.workerd.js", "index.edge.js", "index.bun.js", "index.web.js", "index.node.js"];
  const names = exported(entries[0]);
  assert.ok(names.includes("MultiRegionRatelimit"), `index.workerd.js exports ${names}`);
  for (const entry of entries) assert.deepEqual(exported(entry), names, entry);
  const types = readFileSync(join(pkgDir, "index.d.ts"), "utf8");
  const declared = [...types.matchAll(/^export (?:declare )?(?:class|function) (\w+)/gm)].map(([, name]) => name).sort();
  assert.deepEqual(declared, names, "index.d.ts declares what the entries export");
});

test("Node imports the package through the `node` condition", { skip }, async (t) => {
  const opts = options("node");
  const { entry, result } = await runJson(t, process.execPath, ["cli.mjs", JSON.stringify(opts)]);
  assert.equal(entry, new URL("../../pkg/index.node.js", import.meta.url).href);
  await check(result, opts, /^Node\.js\//);
});

test("Deno imports the package through the `deno` condition", { skip }, async (t) => {
  const opts = options("deno");
  const deno = join(root, "node_modules/.bin/deno");
  // Offline: no config, no lock file, no download, node_modules as it is, a cache of its own. Net access
  // to the gateways only.
  const args = [
    "run", "--no-config", "--no-lock", "--cached-only", "--node-modules-dir=manual",
    `--allow-net=${new URL(URL_).host},${new URL(regions.url).host}`, `--allow-read=${pkgDir}`,
    "cli.mjs", JSON.stringify(opts),
  ];
  const env = { ...process.env, DENO_DIR: join(scratch, "deno"), DENO_NO_UPDATE_CHECK: "1" };
  const { entry, result } = await runJson(t, deno, args, env);
  assert.equal(entry, new URL("../../pkg/index.web.js", import.meta.url).href);
  await check(result, opts, /^Deno\//);
});

test("workerd (miniflare) imports the package through the `workerd` condition", { skip }, async () => {
  // The bundle keeps `import wasm from "./edgelimit_bg.wasm"`; workerd loads the file beside it as a
  // compiled module.
  const outfile = join(scratch, "worker.bundle.mjs");
  const entries = pkgEntries(await bundleWorker(join(runtimesDir, "worker.mjs"), outfile));
  assert.deepEqual(entries, ["pkg/index.workerd.js"]);

  const miniflare = new Miniflare(workerOptions(outfile));
  try {
    // Twice in one isolate: the second request reuses what the first left behind (the package's
    // instance, its AbortControllers), which workerd must accept across requests.
    for (const run of ["first", "second"]) {
      const opts = options(`workerd-${run}`);
      const response = await miniflare.dispatchFetch("http://worker.test/", { method: "POST", body: JSON.stringify(opts) });
      const body = await response.text();
      assert.equal(response.status, 200, `${run} request: ${body}`);
      await check(JSON.parse(body), opts, /^Cloudflare-Workers$/);
    }
  } finally {
    await miniflare.dispose();
  }
});

test("Vercel's edge-runtime imports the package through the `edge-light` condition", { skip }, async () => {
  // What this shows: the `edge-light` entry, bundled as Vercel's bundler does (the `.wasm?module` import
  // becomes a WebAssembly.Module the platform binds to a global), runs in edge-runtime's VM with its
  // primitives (fetch, Response, FetchEvent with waitUntil), from a module compiled in another realm, as
  // Next.js's edge sandbox hands it over. What it does not: the real Vercel bundler and Edge Network, or
  // their limits (tests/frameworks/ builds Next.js apps).
  const globalName = "wasm_edgelimit_bg";
  const bindWasm = {
    name: "wasm-global",
    setup(build) {
      build.onResolve({ filter: /\.wasm\?module$/ }, () => ({ path: globalName, namespace: "wasm-global" }));
      build.onLoad({ filter: /.*/, namespace: "wasm-global" }, () => ({ contents: `export default globalThis.${globalName};` }));
    },
  };
  const { outfile, entries } = await bundle("edge.mjs", { conditions: ["edge-light"], format: "iife", wasmPlugin: bindWasm });
  assert.deepEqual(entries, ["pkg/index.edge.js"]);

  const wasm = await readFile(join(pkgDir, "edgelimit_bg.wasm"));
  const runtime = new EdgeRuntime({
    initialCode: await readFile(outfile, "utf8"),
    extend(context) {
      // Compiled in this realm, not the VM's: the entry must not depend on which realm made the module.
      const module = new WebAssembly.Module(wasm);
      assert.equal(runInContext("(module) => module instanceof WebAssembly.Module", context)(module), false);
      context[globalName] = module;
      return context;
    },
  });
  const opts = options("edge");
  const response = await runtime.dispatchFetch("http://edge.test/", { method: "POST", body: JSON.stringify(opts) });
  await response.waitUntil();
  const body = await response.text();
  assert.equal(response.status, 200, body);
  await check(JSON.parse(body), opts, /^edge-runtime \(edge-runtime\)$/);
});

/** The package's JavaScript snippets (pkg/snippets/...), which the glue imports. */
function snippets() {
  return readdirSync(join(pkgDir, "snippets"), { recursive: true })
    .filter((file) => file.endsWith(".js"))
    .map((file) => `snippets/${file}`);
}

test("Chromium loads the package's browser entry in a page", { skip }, async () => {
  const opts = options("chromium");
  const types = { ".html": "text/html", ".mjs": "text/javascript", ".js": "text/javascript", ".wasm": "application/wasm" };
  // Only these files are served: the page, its modules and the package.
  const files = new Map([
    ["/", join(runtimesDir, "browser.html")],
    ["/runtimes/browser.mjs", join(runtimesDir, "browser.mjs")],
    ["/runtimes/scenario.mjs", join(runtimesDir, "scenario.mjs")],
    ...["index.web.js", "wasm_instance.js", "edgelimit_bg.js", "ratelimit.js", "edgelimit_bg.wasm", ...snippets()].map((file) => [`/pkg/${file}`, join(pkgDir, file)]),
  ]);
  let deliver;
  const outcome = new Promise((resolve) => (deliver = resolve));
  const server = createServer(async (request, response) => {
    if (request.method === "POST" && request.url === "/result") {
      let body = "";
      for await (const chunk of request) body += chunk;
      response.end();
      deliver(JSON.parse(body));
    } else if (request.url === "/options") {
      response.setHeader("content-type", "application/json");
      response.end(JSON.stringify(opts));
    } else if (files.has(request.url)) {
      const file = files.get(request.url);
      response.setHeader("content-type", types[file.slice(file.lastIndexOf("."))]);
      response.end(await readFile(file));
    } else {
      response.statusCode = 404;
      response.end();
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));

  // Profile and temporary files in the scratch directory: a killed Chromium leaves its socket behind.
  const profile = join(scratch, "chromium-profile");
  const chromiumTmp = join(scratch, "chromium-tmp");
  mkdirSync(chromiumTmp);
  const chromium = spawn(
    "chromium",
    [
      "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
      "--no-first-run", "--disable-background-networking", "--disable-component-update",
      `--user-data-dir=${profile}`, `http://127.0.0.1:${server.address().port}/`,
    ],
    // Its own process group, so that the wrapper script, the browser and its children die together.
    { detached: true, stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, TMPDIR: chromiumTmp } },
  );
  let stderr = "";
  chromium.stderr.on("data", (chunk) => (stderr = (stderr + chunk).slice(-4000)));
  const exited = new Promise((resolve, reject) => {
    chromium.once("exit", resolve);
    chromium.once("error", reject);
  });
  let timer;
  try {
    const result = await Promise.race([
      outcome,
      exited.then((code) => Promise.reject(new Error(`chromium exited (${code}) before the page answered:\n${stderr}`))),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer from the page within 60 s:\n${stderr}`)), 60_000);
      }),
    ]);
    assert.equal(result.error, undefined, result.error);
    assert.equal(result.entry, `http://127.0.0.1:${server.address().port}/pkg/index.web.js`);
    await check(result.result, opts, /HeadlessChrome\//);
  } finally {
    clearTimeout(timer);
    if (chromium.pid) {
      try {
        process.kill(-chromium.pid, "SIGKILL");
      } catch (error) {
        if (error.code !== "ESRCH") throw error; // the whole group has already exited
      }
    }
    await exited;
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});
