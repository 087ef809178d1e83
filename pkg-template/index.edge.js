// Vercel's edge (`edge-light`): Next.js (webpack and Turbopack) and Vercel's bundler compile a
// `.wasm?module` import into a WebAssembly.Module bound at deploy time, as the hosted edge requires.
import wasm from "./edgelimit_bg.wasm?module";
import { instantiate } from "./wasm_instance.js";

instantiate(wasm);

export { MultiRegionRatelimit, Redis, rateLimitHeaders } from "./edgelimit_bg.js";
export { Ratelimit } from "./ratelimit.js";
