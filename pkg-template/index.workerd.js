// Cloudflare Workers (workerd), Vercel Edge and other bundlers that import a .wasm file as a compiled
// WebAssembly.Module: instantiate it synchronously at import.
import wasm from "./edgelimit_bg.wasm";
import { initSync } from "./edgelimit.js";

initSync({ module: wasm });

export { MultiRegionRatelimit, Redis, rateLimitHeaders } from "./edgelimit.js";
export { Ratelimit } from "./ratelimit.js";
