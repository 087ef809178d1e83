// Browsers, Deno and any runtime with fetch and top-level await: the `.wasm` next to this module,
// compiled while it streams in (bundlers such as Vite carry it as an asset through this URL).
import { imports, start } from "./wasm_instance.js";

const response = fetch(new URL("./edgelimit_bg.wasm", import.meta.url));
start(await instantiateStreaming(response));

/** The instance of the module `response` brings, compiled as it streams when the server says it is wasm. */
async function instantiateStreaming(response) {
  const reply = await response;
  if (!reply.ok) throw new Error(`edgelimit: fetching ${reply.url} answered ${reply.status}`);
  if (reply.headers.get("content-type")?.startsWith("application/wasm")) {
    return (await WebAssembly.instantiateStreaming(reply, imports)).instance;
  }
  return (await WebAssembly.instantiate(await reply.arrayBuffer(), imports)).instance;
}

export { MultiRegionRatelimit, Redis, rateLimitHeaders } from "./edgelimit_bg.js";
export { Ratelimit } from "./ratelimit.js";
