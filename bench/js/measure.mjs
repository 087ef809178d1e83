// Measuring: a cell runs `callers` concurrent loops of awaited decisions for a fixed time and reports
// CPU (process.cpuUsage, user + system, µs per decision), throughput and, when asked, latency
// quantiles. Rounds alternate the libraries (ours, peer, ours, peer, ...) and are summarised as
// median and min–max: on 2 cores one round says little.
import { performance } from "node:perf_hooks";

/**
 * Runs `decide(caller)` in `callers` concurrent loops for `ms` milliseconds; each loop awaits its
 * decision before the next. Returns the counts, CPU and wall time, latencies if `latency` is set, and
 * each caller's last answer.
 */
export async function cell(decide, { callers, ms, latency = false }) {
  globalThis.gc?.();
  const latencies = [];
  const last = new Array(callers);
  let decisions = 0;
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  const end = start + ms;
  await Promise.all(
    Array.from({ length: callers }, async (_, caller) => {
      do {
        const t0 = latency ? performance.now() : 0;
        last[caller] = await decide(caller);
        if (latency) latencies.push(performance.now() - t0);
        decisions += 1;
      } while (performance.now() < end);
    }),
  );
  const wallMs = performance.now() - start;
  const cpu = process.cpuUsage(cpu0);
  const result = {
    decisions,
    cpuUs: (cpu.user + cpu.system) / decisions,
    perSecond: (decisions * 1000) / wallMs,
    last,
  };
  if (latency) {
    latencies.sort((a, b) => a - b);
    result.p50Ms = quantile(latencies, 0.5);
    result.p99Ms = quantile(latencies, 0.99);
  }
  return result;
}

function quantile(sorted, q) {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

/** Median, min and max of a list of numbers. */
function spread(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  return { median, min: sorted[0], max: sorted.at(-1), rounds: sorted.length };
}

/** The spread of every field of a list of records of numbers. */
export const summarise = (list) =>
  Object.fromEntries(Object.keys(list[0]).map((field) => [field, spread(list.map((s) => s[field]))]));

/** edgelimit's median over the peer's, for every field both have. */
export const ratios = (ours, peer) =>
  Object.fromEntries(Object.keys(ours).filter((f) => f in peer).map((f) => [f, ours[f].median / peer[f].median]));

/**
 * Runs `rounds` rounds of `cells` (name -> async function returning a record of numbers), in the
 * given order within each round, and summarises every field of every cell across rounds; with both an
 * `edgelimit` and a `peer` cell, adds their `ratio`s.
 */
export async function alternate(rounds, cells) {
  const samples = Object.fromEntries(Object.keys(cells).map((name) => [name, []]));
  for (let round = 0; round < rounds; round++) {
    for (const [name, run] of Object.entries(cells)) samples[name].push(await run());
  }
  const result = Object.fromEntries(Object.entries(samples).map(([name, list]) => [name, summarise(list)]));
  if (result.edgelimit && result.peer) result.ratio = ratios(result.edgelimit, result.peer);
  return result;
}
