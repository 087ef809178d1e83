// Section 5b: cold start in workerd (through miniflare). Each sample is a new Miniflare instance running
// a Worker that, on its first request, dynamically imports the library, makes a limiter, takes one
// decision and answers; for edgelimit, the peer, and a baseline whose "library" imports nothing. The times
// per sample:
//   whole            `new Miniflare()` to the first response (workerd's start, module compilation —
//                    a CompiledWasm module is compiled as the Worker loads — import, decision); noisy;
//   importAndDecide  between two calls the Worker makes to a Node service binding, before the import and
//                    after the decision (workerd's clock stands still between I/O, so it is timed outside);
//   imported, made, decided   the same span in its three steps, between the calls the Worker makes after
//                    each (the import, making the limiter, the first decision).
// What a library costs is its median minus the baseline's. Both decide through a fake
// fetch answering the reply recorded for them in section 1 (same limiter), so no network is involved.
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import * as esbuild from "esbuild";
import { Miniflare } from "miniflare";
import { LIMIT } from "./cpu.mjs";
import { pkgDir, root, window } from "./libraries.mjs";
import { summarise } from "./measure.mjs";

// The Worker's entry: it marks the start (after a first call that sets up the binding), imports the
// library's module, makes its limiter, decides, and marks the end of each step.
const ENTRY = `export default {
  async fetch(request, env) {
    await env.MARK.fetch("http://mark/warm-up");
    await env.MARK.fetch("http://mark/start");
    const { make, decide } = await import("./lib.mjs");
    await env.MARK.fetch("http://mark/imported");
    const limiter = make();
    await env.MARK.fetch("http://mark/made");
    const success = await decide(limiter);
    await env.MARK.fetch("http://mark/end");
    return Response.json({ success });
  },
};
`;

// The library's module (bundled), per Worker. Both use the same limiter as section 1, so the recorded reply fits.
const libraries = {
  baseline: () => "export const make = () => null; export const decide = async () => true;",
  edgelimit: (reply) => library(reply, 'import { Ratelimit, Redis } from "edgelimit";', "{ url, token }", ""),
  peer: (reply) =>
    library(
      reply,
      'import { Ratelimit } from "@upstash/ratelimit"; import { Redis } from "@upstash/redis";',
      "{ url, token, enableTelemetry: false }",
      "analytics: false,",
    ),
};

function library(reply, imports, redisOptions, extraOptions) {
  return `${imports}
const REPLY = ${JSON.stringify(reply)};
globalThis.fetch = async () => ({
  status: 200, ok: true, headers: new Headers(), text: async () => REPLY, json: async () => JSON.parse(REPLY),
});
const [url, token] = ["http://redis.test", "token"];
export function make() {
  return new Ratelimit({
    redis: new Redis(${redisOptions}),
    limiter: Ratelimit.fixedWindow(${LIMIT}, ${JSON.stringify(window)}),
    ephemeralCache: false,
    ${extraOptions}
  });
}
export async function decide(ratelimit) {
  return (await ratelimit.limit("cold")).success;
}
`;
}

/**
 * Writes each Worker into a folder of its own: entry.mjs, lib.mjs bundled as wrangler would (`workerd`
 * condition, the .wasm left as a module beside it), and the .wasm where it is imported. Returns the
 * Miniflare module list of each.
 */
async function build(dir, replies) {
  const keepWasm = {
    name: "wasm-module",
    setup(build) {
      build.onResolve({ filter: /\.wasm$/ }, ({ path }) => ({ path, external: true }));
    },
  };
  const modules = {};
  for (const [name, source] of Object.entries(libraries)) {
    const folder = join(dir, name);
    mkdirSync(folder);
    writeFileSync(join(folder, "entry.mjs"), ENTRY);
    writeFileSync(join(folder, "lib.src.mjs"), source(replies[name]));
    const { metafile } = await esbuild.build({
      entryPoints: [join(folder, "lib.src.mjs")],
      nodePaths: [join(root, "bench/js/node_modules"), join(root, "node_modules")],
      bundle: true,
      platform: "neutral",
      conditions: ["workerd", "worker"],
      mainFields: ["module", "main"],
      format: "esm",
      outfile: join(folder, "lib.mjs"),
      metafile: true,
      logLevel: "error",
      plugins: [keepWasm],
    });
    modules[name] = [
      { type: "ESModule", path: join(folder, "entry.mjs") },
      { type: "ESModule", path: join(folder, "lib.mjs") },
    ];
    if (Object.values(metafile.outputs)[0].imports.some(({ path }) => path.endsWith(".wasm"))) {
      copyFileSync(`${pkgDir}edgelimit_bg.wasm`, join(folder, "edgelimit_bg.wasm"));
      modules[name].push({ type: "CompiledWasm", path: join(folder, "edgelimit_bg.wasm") });
    }
  }
  return modules;
}

/**
 * One cold start: ms from `new Miniflare()` to the first response (`whole`), and ms between the
 * Worker's marks: `importAndDecide` from the start to the end, and its steps, each with one call to the
 * mark binding: `imported`, `made` (the limiter), `decided` (the first decision).
 */
async function start(modules) {
  const marks = {};
  const t0 = performance.now();
  const miniflare = new Miniflare({
    modules,
    modulesRoot: dirname(modules[0].path),
    compatibilityDate: "2026-04-01",
    cf: false,
    serviceBindings: {
      MARK: (request) => {
        marks[new URL(request.url).pathname] = performance.now();
        return new Response("marked");
      },
    },
  });
  try {
    const body = await (await miniflare.dispatchFetch("http://worker.test/")).json();
    const whole = performance.now() - t0;
    if (!body.success) throw new Error(`cold start: ${modules[1].path} did not admit its first request`);
    return {
      whole,
      importAndDecide: marks["/end"] - marks["/start"],
      imported: marks["/imported"] - marks["/start"],
      made: marks["/made"] - marks["/imported"],
      decided: marks["/end"] - marks["/made"],
    };
  } finally {
    await miniflare.dispose();
  }
}

/**
 * Runs `samples` rounds of (baseline, edgelimit, peer) starts. `replies` holds, per library, the body
 * its fake fetch answers. Returns per Worker the summaries of each time of `start`, per
 * library those minus the baseline's (`aboveBaseline`), and their `ratio` (null when within noise).
 */
export async function coldStartSection({ samples, replies, log }) {
  const dir = mkdtempSync(join(tmpdir(), "edgelimit-bench-cold-"));
  try {
    const modules = await build(dir, replies);
    const times = { baseline: [], edgelimit: [], peer: [] };
    await start(modules.baseline); // warm-up: the first Miniflare of the process pays for more than workerd
    for (let round = 0; round < samples; round++) {
      log(`cold start: round ${round + 1} of ${samples}`);
      for (const name of Object.keys(times)) times[name].push(await start(modules[name]));
    }
    const result = Object.fromEntries(Object.entries(times).map(([name, list]) => [name, summarise(list)]));
    // A library's cost: its median minus the baseline's; a ratio only where both stand above the noise.
    for (const lib of ["edgelimit", "peer"]) {
      result[lib].aboveBaseline = Object.fromEntries(
        Object.keys(result.baseline).map((field) => [field, result[lib][field].median - result.baseline[field].median]),
      );
    }
    const [ours, peer] = [result.edgelimit.aboveBaseline, result.peer.aboveBaseline];
    result.ratio = Object.fromEntries(
      Object.keys(ours).map((field) => [field, ours[field] > 0 && peer[field] > 0 ? ours[field] / peer[field] : null]),
    );
    return result;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
