// Section 3b: a hot identifier end to end through the real gateway: every caller on one key, a limit
// never reached, edgelimit without and with leases (`lease: { tokens, ttl }`) beside the peer; HTTP
// requests per decision counted at `fetch` (the peer's auto-pipelining batches concurrent commands).
import { algorithms, ours, peer, Ratelimit, Redis } from "./libraries.mjs";
import { alternate, cell } from "./measure.mjs";

const LIMIT = 1_000_000_000;
const LEASE = { tokens: 1_000, ttl: "1 s" };

/** Runs the section: per caller count, the summaries (perSecond, p50Ms, p99Ms, requests per decision). */
export async function leaseSection({ url, token, callers, cellMs, rounds, log }) {
  const [, ourFactory, peerFactory] = algorithms.find(([name]) => name === "fixed window");
  const global = globalThis.fetch;
  let requests = 0;
  // Counts every request, the peer's and edgelimit's alike, for as long as the section runs.
  globalThis.fetch = (target, init) => {
    requests += 1;
    return global(target, init);
  };
  try {
    const stamp = Date.now();
    const limiters = {
      edgelimit: ours({ url, token, limiter: ourFactory(LIMIT), prefix: `bench-hot-edgelimit-${stamp}` }),
      leased: new Ratelimit({
        redis: new Redis({ url, token }),
        limiter: ourFactory(LIMIT),
        prefix: `bench-hot-leased-${stamp}`,
        ephemeralCache: false,
        lease: LEASE,
      }),
      peer: peer({ url, token, limiter: peerFactory(LIMIT), prefix: `bench-hot-peer-${stamp}` }),
    };
    const rows = [];
    for (const count of callers) {
      log(`hot identifier: ${count} caller(s)`);
      const cells = {};
      for (const [lib, limiter] of Object.entries(limiters)) {
        cells[lib] = async () => {
          requests = 0;
          const run = await cell(
            async () => {
              const answer = await limiter.limit("hot");
              await answer.pending;
              return answer;
            },
            { callers: count, ms: cellMs, latency: true },
          );
          const refused = run.last.find((answer) => !answer.success || answer.reason);
          if (refused) throw new Error(`${lib}: a request was refused end to end: ${JSON.stringify(refused)}`);
          const perDecision = requests / run.decisions;
          return { perSecond: run.perSecond, p50Ms: run.p50Ms, p99Ms: run.p99Ms, requests: perDecision };
        };
      }
      for (const run of Object.values(cells)) await run(); // warm-up, not counted
      const result = await alternate(rounds, cells);
      result.leasedRatio = result.leased.perSecond.median / result.peer.perSecond.median;
      rows.push({ callers: count, ...result });
    }
    return { rows, lease: LEASE };
  } finally {
    globalThis.fetch = global;
  }
}
