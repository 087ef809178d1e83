// Section 3: end to end through the real gateway and redis-server (the machine's loopback): decisions
// per second, latency quantiles, the client's CPU per decision and Redis's time per decision (the `usec`
// of every command in `INFO commandstats`, read through the gateway before and after each cell), fixed
// window, a limit never reached, each caller on a key of its own.
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
        const before = await redisTimeUs(url, token);
        const run = await cell((caller) => limiter.limit(keys[caller]), { callers: count, ms: cellMs, latency: true });
        const redisUs = ((await redisTimeUs(url, token)) - before) / run.decisions;
        const refused = run.last.find((answer) => !answer.success || answer.reason);
        if (refused) throw new Error(`${lib}: a request was refused end to end: ${JSON.stringify(refused)}`);
        return { perSecond: run.perSecond, p50Ms: run.p50Ms, p99Ms: run.p99Ms, cpuUs: run.cpuUs, redisUs };
      };
    }
    await cells.edgelimit(); // warm-up (connections, JIT), not counted
    await cells.peer();
    rows.push({ callers: count, ...(await alternate(rounds, cells)) });
  }
  return { rows };
}

/** Redis's time inside commands so far, in µs: the sum of every command's `usec` in `INFO commandstats`, asked through the gateway. */
export async function redisTimeUs(url, token) {
  const response = await fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${token}` },
    body: JSON.stringify(["INFO", "commandstats"]),
  });
  const { result } = await response.json();
  if (typeof result !== "string") throw new Error(`INFO commandstats through the gateway answered ${JSON.stringify(result)}`);
  return [...result.matchAll(/^cmdstat_[^:]+:.*\busec=(\d+)/gm)].reduce((sum, match) => sum + Number(match[1]), 0);
}
