// The libraries measured, loaded as a user loads them: edgelimit from pkg/ by its bare name (Node
// picks the package's `node` export), @upstash/ratelimit + @upstash/redis and rate-limiter-flexible from
// node_modules/. Each limiter is built with the options every section uses.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Ratelimit as PeerRatelimit } from "@upstash/ratelimit";

export { PeerRatelimit };
import { Redis as PeerRedis } from "@upstash/redis";
import { linkPackage } from "../../scripts/link_pkg.mjs";

export const root = fileURLToPath(new URL("../../", import.meta.url));
export const pkgDir = `${root}pkg/`;

// bench/js/node_modules/edgelimit links to pkg/, so `import("edgelimit")` reads pkg/package.json.
linkPackage(fileURLToPath(new URL(".", import.meta.url)));
export const { MultiRegionRatelimit, Ratelimit, Redis } = await import("edgelimit");

export const version = (name) => JSON.parse(readFileSync(`${root}node_modules/${name}/package.json`, "utf8")).version;
export const peerName = `@upstash/ratelimit ${version("@upstash/ratelimit")} + @upstash/redis ${version("@upstash/redis")}`;

/**
 * A window of at least 1000 h (Redis-backed sections) whose current epoch-aligned window has more than
 * a day left: a reply recorded at the start of the run stays the state of the run.
 */
export const window = (() => {
  const hour = 3_600_000;
  let hours = 1000;
  while ((hours * hour - (Date.now() % (hours * hour))) < 24 * hour) hours += 1;
  return `${hours} h`;
})();

/** The Redis-backed algorithms, as [name, edgelimit factory, peer factory or null] for a limit. */
export const algorithms = [
  ["fixed window", (n) => Ratelimit.fixedWindow(n, window), (n) => PeerRatelimit.fixedWindow(n, window)],
  ["sliding window", (n) => Ratelimit.slidingWindow(n, window), (n) => PeerRatelimit.slidingWindow(n, window)],
  ["token bucket", (n) => Ratelimit.tokenBucket(1, window, n), (n) => PeerRatelimit.tokenBucket(1, window, n)],
  ["GCRA", (n) => Ratelimit.gcra(n, window), null],
];

/** edgelimit on Redis (the global fetch unless `fetch` is given), no ephemeral cache. */
export const ours = ({ url, token, limiter, prefix }) =>
  new Ratelimit({ redis: new Redis({ url, token }), limiter, prefix, ephemeralCache: false });

/** The peer on Redis through the global fetch: no telemetry, no ephemeral cache, no analytics. */
export const peer = ({ url, token, limiter, prefix }) =>
  new PeerRatelimit({
    redis: new PeerRedis({ url, token, enableTelemetry: false }),
    limiter,
    prefix,
    ephemeralCache: false,
    analytics: false,
  });

/** edgelimit's WebAssembly memory in bytes (of the instance the package runs on). */
export async function wasmMemoryBytes() {
  const { running } = await import(`${pkgDir}wasm_instance.js`);
  return running.exports.memory.buffer.byteLength;
}
