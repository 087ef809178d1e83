// Section 3: end to end through the real gateway and redis-server (the machine's loopback): decisions
// per second, latency quantiles and the client's CPU per decision, fixed window, a limit never reached,
// each caller on a key of its own.
import { algorithms, ours, peer } from "./libraries.mjs";
import { alternate, cell } from "./measure.mjs";

const LIMIT = 1_000_000_000;

/** Runs the section: per caller count, the summaries of each library (perSecond, p50Ms, p99Ms, cpuUs). */
export async function e2eSection({ url, token, callers, cellMs, rounds, log }) {
  const [, ourFactory, peerFactory] = algorithms.find(([name]) => name === "fixed window");
  const stamp = Date.now();
  const limiters = {
    edgelimit: ours({ url, token, limiter: ourFactory(LIMIT), prefix: `bench-e2e-edgelimit-${stamp}` }),
    peer: peer({ url, token, limiter: peerFactory(LIMIT), prefix: `bench-e2e-peer-${stamp}` }),
  };
  const rows = [];
  for (const count of callers) {
    log(`end to end: ${count} caller(s)`);
    const keys = Array.from({ length: count }, (_, i) => `user:${i}`);
    const cells = {};
    for (const [lib, limiter] of Object.entries(limiters)) {
      cells[lib] = async () => {
        const run = await cell((caller) => limiter.limit(keys[caller]), { callers: count, ms: cellMs, latency: true });
        const refused = run.last.find((answer) => !answer.success || answer.reason);
        if (refused) throw new Error(`${lib}: a request was refused end to end: ${JSON.stringify(refused)}`);
        return { perSecond: run.perSecond, p50Ms: run.p50Ms, p99Ms: run.p99Ms, cpuUs: run.cpuUs };
      };
    }
    await cells.edgelimit(); // warm-up (connections, JIT), not counted
    await cells.peer();
    rows.push({ callers: count, ...(await alternate(rounds, cells)) });
  }
  return { rows };
}
