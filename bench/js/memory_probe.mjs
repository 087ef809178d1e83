// One memory sample, in a process of its own (run by in_memory.mjs with --expose-gc):
//
//   node --expose-gc bench/js/memory_probe.mjs edgelimit|peer KEYS
//
// Takes one decision on each of KEYS keys with a limiter of inMemoryLimiters(), then prints, as JSON,
// what grew after a full gc: heapUsed, rss and edgelimit's WebAssembly memory (the
// buffer's size; it only grows). The keys are made on the fly, so only what the limiter keeps stays.
import { inMemoryLimiters } from "./in_memory.mjs";
import { wasmMemoryBytes } from "./libraries.mjs";

const [lib, count] = [process.argv[2], Number(process.argv[3])];
const limiter = inMemoryLimiters()[lib];
const decide = lib === "edgelimit" ? (key) => limiter.limit(key) : (key) => limiter.consume(key);
await decide("warm-up");

const measure = async () => {
  globalThis.gc();
  const { heapUsed, rss } = process.memoryUsage();
  return { heapUsed, rss, wasm: await wasmMemoryBytes() };
};
const before = await measure();
for (let i = 0; i < count; i++) await decide(`user:${i}`);
const after = await measure();
const grown = Object.fromEntries(Object.keys(before).map((field) => [field, after[field] - before[field]]));
console.log(JSON.stringify(grown));
