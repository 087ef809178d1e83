// Section 2: the in-memory decision from JavaScript. edgelimit without `redis` (its in-memory store)
// beside rate-limiter-flexible's RateLimiterMemory: µs of CPU per `await limit()` / `await consume()`
// with a limit never reached, on one key and on 100k keys visited in turn; then the memory each holds
// after visiting many keys, measured in a fresh process per sample (memory_probe.mjs).
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";
import { RateLimiterMemory } from "rate-limiter-flexible";
import { Ratelimit } from "./libraries.mjs";
import { alternate, cell, summarise } from "./measure.mjs";

/** A limit never reached. */
export const POINTS = 1_000_000_000;
/** Windows of an hour: rate-limiter-flexible arms a timer per key, and Node caps timers at 2^31 - 1 ms. */
export const WINDOW_S = 3600;
/** The most keys edgelimit's in-memory store holds (index.d.ts: it evicts past 100,000). */
export const EDGELIMIT_MAX_KEYS = 100_000;

export const inMemoryLimiters = () => ({
  edgelimit: new Ratelimit({ limiter: Ratelimit.fixedWindow(POINTS, `${WINDOW_S} s`), ephemeralCache: false }),
  peer: new RateLimiterMemory({ points: POINTS, duration: WINDOW_S }),
});

/** Runs the section: decision rows (per key shape) and memory rows (per key count). */
export async function inMemorySection({ cellMs, warmupMs, rounds, manyKeys, memoryKeys, memoryRounds, log }) {
  const limiters = inMemoryLimiters();
  const decide = {
    edgelimit: (key) => limiters.edgelimit.limit(key),
    peer: (key) => limiters.peer.consume(key), // rejects when the limit is reached
  };
  const rows = [];
  for (const [shape, count] of [["one key", 1], [`${manyKeys.toLocaleString("en")} keys in turn`, manyKeys]]) {
    log(`in memory: ${shape}`);
    const keys = Array.from({ length: count }, (_, i) => `user:${i}`);
    const cells = {};
    for (const lib of Object.keys(limiters)) {
      let next = 0;
      const run = () => {
        next = next + 1 === count ? 0 : next + 1;
        return decide[lib](keys[next]);
      };
      cells[lib] = async (ms = cellMs) => {
        const { cpuUs, last } = await cell(run, { callers: 1, ms });
        if (lib === "edgelimit" && !last[0].success) throw new Error("edgelimit denied in memory");
        return { cpuUs };
      };
    }
    await cells.edgelimit(warmupMs); // warm-up, not counted (V8's tiers; and both stores get every key)
    await cells.peer(warmupMs);
    rows.push({ shape, ...(await alternate(rounds, cells)) });
  }
  const memory = [];
  for (const keys of memoryKeys) {
    log(`in memory: memory after ${keys.toLocaleString("en")} keys`);
    const samples = { edgelimit: [], peer: [] };
    for (let round = 0; round < memoryRounds; round++) {
      for (const lib of Object.keys(samples)) samples[lib].push(await probe(lib, keys));
    }
    const [ours, peer] = [summarise(samples.edgelimit), summarise(samples.peer)];
    // What each library keeps: edgelimit in its WebAssembly memory, rate-limiter-flexible on the heap.
    memory.push({ keys, edgelimit: ours, peer, ratio: { kept: ours.wasm.median / peer.heapUsed.median } });
  }
  return { rows, memory };
}

/** One memory sample of `lib` after `keys` keys, in a fresh `node --expose-gc` process. */
async function probe(lib, keys) {
  const script = fileURLToPath(new URL("./memory_probe.mjs", import.meta.url));
  const { stdout } = await promisify(execFile)(process.execPath, ["--expose-gc", script, lib, String(keys)], {
    timeout: 300_000,
  });
  return JSON.parse(stdout);
}
