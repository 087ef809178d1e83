// Node.js: the `.wasm` beside this module, read and compiled at start.
import { readFileSync } from "node:fs";
import { instantiate } from "./wasm_instance.js";

instantiate(new WebAssembly.Module(readFileSync(wasmFile())));

/**
 * Where the `.wasm` is. Bundlers that carry it as an asset (Turbopack, esbuild, Vite) rewrite the
 * first URL to the copy they emit. webpack under Next.js (`url: "relative"`) rewrites it to a path the
 * app serves, which is no file: then it is read where the package is installed, which webpack records
 * as this module's `import.meta.url` (the second URL, which webpack leaves alone).
 */
function wasmFile() {
  const carried = new URL("./edgelimit_bg.wasm", import.meta.url);
  if (carried.protocol === "file:") return carried;
  const installed = import.meta.url;
  return new URL("./edgelimit_bg.wasm", installed);
}

export { MultiRegionRatelimit, Redis, rateLimitHeaders } from "./edgelimit_bg.js";
export { Ratelimit } from "./ratelimit.js";
