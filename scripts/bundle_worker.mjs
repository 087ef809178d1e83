// Bundles a Worker as wrangler would for workerd: the package's `workerd` (then `worker`) export, ESM,
// with `import wasm from "./edgelimit_bg.wasm"` kept as it is; workerd loads that file, copied beside
// the bundle, itself as a compiled module (workerOptions). Used by examples/worker/demo.mjs and
// tests/js/runtimes.test.mjs, so the demo runs the Worker the way the runtime matrix tests it.
import { copyFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const root = fileURLToPath(new URL("../", import.meta.url));

/** Leaves every `.wasm` import to the runtime. */
const keepWasm = {
  name: "wasm-module",
  setup(build) {
    build.onResolve({ filter: /\.wasm$/ }, ({ path }) => ({ path, external: true }));
  },
};

/**
 * Bundles the Worker `entry` (a path) into `outfile` and copies pkg/edgelimit_bg.wasm beside it.
 * Returns esbuild's metafile (paths relative to the repository root).
 */
export async function bundleWorker(entry, outfile) {
  const { metafile } = await esbuild.build({
    entryPoints: [entry],
    absWorkingDir: root,
    bundle: true,
    platform: "neutral",
    conditions: ["workerd", "worker"],
    format: "esm",
    outfile,
    metafile: true,
    logLevel: "error",
    plugins: [keepWasm],
  });
  copyFileSync(join(root, "pkg/edgelimit_bg.wasm"), join(dirname(outfile), "edgelimit_bg.wasm"));
  return metafile;
}

/** Miniflare options that run the bundle at `outfile` in workerd, its `.wasm` beside it as a compiled module. */
export function workerOptions(outfile) {
  return {
    modules: true,
    scriptPath: outfile,
    modulesRoot: dirname(outfile),
    modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }],
    compatibilityDate: "2026-04-01",
    cf: false,
  };
}
