// Node.js: read the .wasm next to this module and instantiate it synchronously.
import { readFileSync } from "node:fs";
import { initSync } from "./edgelimit.js";

initSync({ module: readFileSync(new URL("./edgelimit_bg.wasm", import.meta.url)) });

export { MultiRegionRatelimit, Redis, rateLimitHeaders } from "./edgelimit.js";
export { Ratelimit } from "./ratelimit.js";
