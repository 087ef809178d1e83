// Bun: the `.wasm` imported as a file, which `bun build` copies beside its bundle (naming it relative to
// the bundle) and `bun build --compile` embeds in the executable; read and compiled at start.
import { readFileSync } from "node:fs";
import path from "./edgelimit_bg.wasm" with { type: "file" };
import { instantiate } from "./wasm_instance.js";

instantiate(new WebAssembly.Module(readFileSync(new URL(path, import.meta.url))));

export { MultiRegionRatelimit, Redis, rateLimitHeaders } from "./edgelimit_bg.js";
export { Ratelimit } from "./ratelimit.js";
