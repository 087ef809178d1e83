// Cloudflare Workers (workerd) and bundlers that import a `.wasm` file as a compiled WebAssembly.Module
// (wrangler, miniflare): no compilation at run time.
import wasm from "./edgelimit_bg.wasm";
import { instantiate } from "./wasm_instance.js";

instantiate(wasm);

export { MultiRegionRatelimit, Redis, rateLimitHeaders } from "./edgelimit_bg.js";
export { Ratelimit } from "./ratelimit.js";
