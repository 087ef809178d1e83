// Browsers, Deno and any runtime with fetch and top-level await: fetch the .wasm next to this module.
import init from "./edgelimit.js";

await init({ module_or_path: new URL("./edgelimit_bg.wasm", import.meta.url) });

export { MultiRegionRatelimit, Redis, rateLimitHeaders } from "./edgelimit.js";
export { Ratelimit } from "./ratelimit.js";
