// Section 10: two limits on every request ("a burst limit and a quota"): edgelimit's set of two limits
// (`limiter: [...]`, decided all or nothing in one script call) beside what users of the peer do today,
// two @upstash/ratelimit instances with distinct prefixes awaited in turn (the quota first, then the
// burst limit when the quota admits). HTTP requests and CPU per decision with the network removed (the
// fake fetch of section 1), decisions/s and p99 end to end through the gateway, and the requests each
// pair counted in one limit while the other denied them, read back from Redis.
import { PeerRatelimit, Ratelimit, Redis, peer, window } from "./libraries.mjs";
import { ReplyTable } from "./fake_fetch.mjs";
import { withFetchCount } from "./fetch_count.mjs";
import { alternate, cell } from "./measure.mjs";
import { num, table } from "./markdown.mjs";

/** A limit never reached in the CPU and end-to-end cells. */
const LIMIT = 1_000_000_000;

/**
 * The two subjects on `url`/`token` with keys under `prefix`: the quota (fixed window of `quota`) and
 * the burst limit (sliding window of `burst`), each deciding `decide(identifier)` to
 * `{ success, limit, remaining }` (the pair: the burst's numbers once the quota admits).
 */
function subjects({ url, token, prefix, quota, burst }) {
  const set = new Ratelimit({
    redis: new Redis({ url, token }),
    prefix: `${prefix}-edgelimit-quota`,
    limiter: [Ratelimit.fixedWindow(quota, window), { limiter: Ratelimit.slidingWindow(burst, window), prefix: `${prefix}-edgelimit-burst` }],
    ephemeralCache: false,
  });
  const quotaPeer = peer({ url, token, limiter: PeerRatelimit.fixedWindow(quota, window), prefix: `${prefix}-peer-quota` });
  const burstPeer = peer({ url, token, limiter: PeerRatelimit.slidingWindow(burst, window), prefix: `${prefix}-peer-burst` });
  return {
    edgelimit: {
      decide: (identifier) => set.limit(identifier),
      quotaPrefix: `${prefix}-edgelimit-quota`,
    },
    peer: {
      decide: async (identifier) => {
        const first = await quotaPeer.limit(identifier);
        if (!first.success) return first;
        const second = await burstPeer.limit(identifier);
        const remaining = Math.min(first.remaining, second.remaining);
        return { success: second.success, limit: second.limit, remaining };
      },
      quotaPrefix: `${prefix}-peer-quota`,
    },
  };
}

const decision = ({ success, limit, remaining }) => JSON.stringify({ success, limit, remaining });

/** One command through the gateway. */
async function command(url, token, args) {
  const response = await fetch(url, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: JSON.stringify(args) });
  const { result, error } = await response.json();
  if (error) throw new Error(`${args[0]} through the gateway: ${error}`);
  return result;
}

/** CPU, requests and bytes per decision with the network removed, per caller count. */
async function cpuRows({ url, token, callers, cellMs, warmupMs, rounds, log }) {
  const realFetch = globalThis.fetch;
  const libs = subjects({ url, token, prefix: `bench-limits-cpu-${Date.now()}`, quota: LIMIT, burst: LIMIT });
  const recorded = {};
  for (const [lib, subject] of Object.entries(libs)) {
    const table = new ReplyTable();
    globalThis.fetch = table.record(realFetch);
    try {
      await subject.decide("recorded");
      const expected = await subject.decide("recorded");
      if (!expected.success) throw new Error(`limits, ${lib}: the recorded decision denied`);
      recorded[lib] = { table, expected: decision(expected) };
    } finally {
      globalThis.fetch = realFetch;
    }
  }
  const rows = [];
  for (const count of callers) {
    log(`limits: CPU, ${count} caller(s)`);
    const keys = Array.from({ length: count }, (_, i) => `user:${i}`);
    const cells = {};
    for (const [lib, { table, expected }] of Object.entries(recorded)) {
      const replay = table.replay();
      cells[lib] = async (ms = cellMs) => {
        globalThis.fetch = replay;
        table.resetCounts();
        try {
          const run = await cell((caller) => libs[lib].decide(keys[caller]), { callers: count, ms });
          const wrong = run.last.find((answer) => decision(answer) !== expected);
          if (wrong) throw new Error(`limits, ${lib}: answered ${decision(wrong)} on replay, recorded ${expected}`);
          return { cpuUs: run.cpuUs, requests: table.requests / run.decisions, bytes: table.bytes / run.decisions };
        } finally {
          globalThis.fetch = realFetch;
        }
      };
    }
    await cells.edgelimit(warmupMs);
    await cells.peer(warmupMs);
    rows.push({ callers: count, ...(await alternate(rounds, cells)) });
  }
  return rows;
}

/** Decisions/s, p50/p99 and requests per decision (counted at fetch) end to end, per caller count. */
async function e2eRows({ url, token, callers, cellMs, rounds, log }) {
  return withFetchCount(async (counted) => {
    const libs = subjects({ url, token, prefix: `bench-limits-e2e-${Date.now()}`, quota: LIMIT, burst: LIMIT });
    const rows = [];
    for (const count of callers) {
      log(`limits: end to end, ${count} caller(s)`);
      const keys = Array.from({ length: count }, (_, i) => `user:${i}`);
      const cells = {};
      for (const [lib, subject] of Object.entries(libs)) {
        cells[lib] = async () => {
          counted.requests = 0;
          const run = await cell((caller) => subject.decide(keys[caller]), { callers: count, ms: cellMs, latency: true });
          const refused = run.last.find((answer) => !answer.success || answer.reason);
          if (refused) throw new Error(`limits, ${lib}: a request was refused end to end: ${JSON.stringify(refused)}`);
          return { perSecond: run.perSecond, p50Ms: run.p50Ms, p99Ms: run.p99Ms, requests: counted.requests / run.decisions };
        };
      }
      await cells.edgelimit(); // warm-up (connections, JIT), not counted
      await cells.peer();
      rows.push({ callers: count, ...(await alternate(rounds, cells)) });
    }
    return rows;
  });
}

/**
 * `requests` decisions on one identifier by `callers` concurrent callers, a quota of `quota` and a
 * burst limit of `burst` (below it): admitted, and counted by the quota while denied (the quota's
 * counter in Redis minus the admitted).
 */
async function overCounting({ url, token, callers, requests, quota, burst }) {
  const libs = subjects({ url, token, prefix: `bench-limits-over-${Date.now()}`, quota, burst });
  const result = {};
  for (const [lib, subject] of Object.entries(libs)) {
    let admitted = 0;
    let left = requests;
    await Promise.all(Array.from({ length: callers }, async () => {
      while (left > 0) {
        left -= 1;
        if ((await subject.decide("hot")).success) admitted += 1;
      }
    }));
    const keys = await command(url, token, ["KEYS", `${subject.quotaPrefix}:hot:*`]);
    const counted = keys.length ? (await command(url, token, ["MGET", ...keys])).reduce((sum, value) => sum + Number(value), 0) : 0;
    result[lib] = { requests, admitted, overCounted: counted - admitted };
  }
  return result;
}

/** Runs the section. */
export async function limitsSection({ url, token, callers, cpuMs, warmupMs, e2eMs, rounds, over, log }) {
  const cpu = await cpuRows({ url, token, callers, cellMs: cpuMs, warmupMs, rounds, log });
  const e2e = await e2eRows({ url, token, callers, cellMs: e2eMs, rounds, log });
  log("limits: over-counting");
  const overCounted = await overCounting({ url, token, ...over });
  if (overCounted.edgelimit.overCounted !== 0) {
    throw new Error(`limits: edgelimit's set counted ${overCounted.edgelimit.overCounted} requests it denied`);
  }
  if (!(overCounted.edgelimit.admitted > 0 && overCounted.edgelimit.admitted <= over.burst)) {
    throw new Error(`limits: edgelimit's set admitted ${overCounted.edgelimit.admitted} of a burst limit of ${over.burst}`);
  }
  return { cpu, e2e, over: { ...over, ...overCounted } };
}

/** The section as markdown. */
export function limitsMarkdown({ cpu, e2e, over }, { limits: { cpuMs, e2eMs } }) {
  const both = (row, field, digits = (x) => num(x)) => `${digits(row.edgelimit[field].median)} / ${digits(row.peer[field].median)}`;
  const ratio = (value) => `**${value.toFixed(2)}×**`;
  const cpuBody = cpu.map((row) => [row.callers, both(row, "requests"), both(row, "cpuUs"), ratio(row.ratio.cpuUs)]);
  const e2eBody = e2e.map((row) => [
    row.callers,
    both(row, "requests"),
    both(row, "perSecond"),
    ratio(row.ratio.perSecond),
    both(row, "p99Ms"),
  ]);
  const line = ({ requests, admitted, overCounted }) => `${admitted} of ${requests} admitted, **${overCounted}** counted by the quota while the burst limit denied them`;
  return `## 10. Two limits on every request: a set beside two instances

edgelimit's \`limiter: [Ratelimit.fixedWindow(quota, w), { limiter: Ratelimit.slidingWindow(burst, w), prefix }]\`
(one script call decides both, all or nothing) beside two ${"`"}@upstash/ratelimit${"`"} instances with distinct prefixes awaited
in turn, the quota first and the burst limit when the quota admits (what the peer's users do today). Network removed
(the fake fetch of section 1), each caller on a key of its own, limits never reached, cells of ${num(cpuMs / 1000)} s:

${table(["callers", "requests per decision (edgelimit / peer pair)", "CPU µs per decision (edgelimit / peer pair)", "edgelimit / peer pair"], cpuBody)}

End to end through the gateway, cells of ${num(e2eMs / 1000)} s (requests counted at \`fetch\`: both coalesce concurrent
commands into one \`/pipeline\`):

${table(["callers", "requests per decision", "decisions/s (edgelimit / peer pair)", "edgelimit / peer pair", "p99 ms (edgelimit / peer pair)"], e2eBody)}

Over-counting: ${over.requests} requests on one identifier from ${over.callers} callers, a quota of ${over.quota} and a burst limit of
${over.burst}; what the quota's counter holds in Redis beyond the requests admitted. edgelimit: ${line(over.edgelimit)}; the peer
pair: ${line(over.peer)}.`;
}
