// Section 3b: a hot identifier end to end through the real gateway: every caller on one key, a limit
// never reached, edgelimit without and with leases (`lease: { tokens, ttl }`) beside the peer; HTTP
// requests per decision counted at `fetch` (the peer's auto-pipelining batches concurrent commands).
// Then what leasing costs: clients that go idle holding leases, and what the others are refused.
import { algorithms, ours, peer, Ratelimit, Redis } from "./libraries.mjs";
import { withFetchCount } from "./fetch_count.mjs";
import { alternate, cell } from "./measure.mjs";

const LIMIT = 1_000_000_000;
const LEASE = { tokens: 1_000, ttl: "1 s" };
/** The idle row: CLIENTS separate instances on one identifier of limit IDLE_LIMIT, IDLE of them go idle. */
const IDLE_LIMIT = 1_000;
const CLIENTS = 8;
const IDLE = 4;
const IDLE_LEASE = { tokens: 100, ttl: "1 s" };

/**
 * Per algorithm, edgelimit with IDLE_LEASE and the peer: CLIENTS clients (one instance each) decide
 * together on one fresh identifier, `round` decisions each; then IDLE of them go idle, keeping what they
 * hold, and the others decide until each is denied three times in a row. What was admitted of the
 * limit: under it is what idle holders withheld, over it would be over-admission. edgelimit runs once
 * per round of ROUNDS (idle holders withhold more or less as the clients stop early or late in a lease),
 * and its worst is kept; the peer, which holds nothing, once.
 */
async function idleRows({ url, token }) {
  const ROUNDS = [15, 30, 50];
  const stamp = Date.now();
  const run = async (make, prefix, round) => {
    const clients = Array.from({ length: CLIENTS }, () => make(prefix));
    let admitted = 0;
    const decide = async (client) => {
      const { success, pending } = await client.limit("shared");
      await pending;
      if (success) admitted++;
      return success;
    };
    await Promise.all(clients.map(async (client) => {
      for (let i = 0; i < round; i++) await decide(client);
    }));
    await Promise.all(clients.slice(IDLE).map(async (client) => {
      for (let denied = 0; denied < 3; ) denied = (await decide(client)) ? 0 : denied + 1;
    }));
    await Promise.all(clients.map((client) => client.returnLeases?.()));
    return { admitted, under: Math.max(0, IDLE_LIMIT - admitted), over: Math.max(0, admitted - IDLE_LIMIT) };
  };
  const rows = [];
  for (const [name, ourFactory, peerFactory] of algorithms) {
    const slug = name.replace(" ", "-");
    const leased = (prefix) =>
      new Ratelimit({ redis: new Redis({ url, token }), limiter: ourFactory(IDLE_LIMIT), prefix, ephemeralCache: false, lease: IDLE_LEASE });
    const row = { algorithm: name, limit: IDLE_LIMIT, leased: null, peer: null };
    for (const round of ROUNDS) {
      const result = await run(leased, `bench-idle-leased-${slug}-${round}-${stamp}`, round);
      if (!row.leased || result.under > row.leased.under || result.over > 0) row.leased = { ...result, round };
    }
    if (peerFactory) {
      const make = (prefix) => peer({ url, token, limiter: peerFactory(IDLE_LIMIT), prefix });
      row.peer = await run(make, `bench-idle-peer-${slug}-${stamp}`, ROUNDS[0]);
    }
    rows.push(row);
  }
  return rows;
}

/** Runs the section: per caller count, the summaries (perSecond, p50Ms, p99Ms, requests per decision). */
export async function leaseSection({ url, token, callers, cellMs, rounds, log }) {
  const [, ourFactory, peerFactory] = algorithms.find(([name]) => name === "fixed window");
  // Counts every request, the peer's and edgelimit's alike, for as long as the section runs.
  return withFetchCount(async (counted) => {
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
          counted.requests = 0;
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
          const perDecision = counted.requests / run.decisions;
          return { perSecond: run.perSecond, p50Ms: run.p50Ms, p99Ms: run.p99Ms, requests: perDecision };
        };
      }
      for (const run of Object.values(cells)) await run(); // warm-up, not counted
      const result = await alternate(rounds, cells);
      result.leasedRatio = result.leased.perSecond.median / result.peer.perSecond.median;
      rows.push({ callers: count, ...result });
    }
    log("clients going idle holding leases");
    const idle = await idleRows({ url, token });
    const over = idle.find((row) => row.leased.over > 0 || (row.peer && row.peer.over > 0));
    if (over) throw new Error(`over-admission with clients going idle: ${JSON.stringify(over)}`);
    return { rows, lease: LEASE, idle: { rows: idle, clients: CLIENTS, idleClients: IDLE, lease: IDLE_LEASE } };
  });
}
