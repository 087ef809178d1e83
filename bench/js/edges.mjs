// Section 8: exact at every edge. Processes of their own (edges_worker.mjs: each with its own clock
// and its own queue) on one hot identifier through the real gateway:
// - boundaries: `processes` × `callers` callers, every request held 0 to 2 × `delayMs` before it leaves
//   (so many are stamped in one window and reach Redis in the next), over windows of `windowMs`; each admission
//   is counted in the window its answer names (its `reset`): over-admission is what windows admit past
//   the limit (the token bucket: past what it holds plus its refills over the run), edgelimit beside
//   the peer, rounds alternating;
// - skew: an instance on time and one `skewsMs` ahead or behind, together for at least the skew plus
//   three windows (so that both name some windows): the same over-admission per algorithm for edgelimit
//   on Redis's clock (the default), on the instances' clocks (`localClock`), with leases, a reset by the
//   skewed instance while the other holds leases, and the peer;
// - the Redis clock's cost: CPU per decision in the client and inside Redis (`INFO commandstats`), on
//   Redis's clock and on the local one, alternating;
// - the longer expiry's cost in Redis memory: keys alive per identifier and bytes per key.
// Counts, not timings, are checked: edgelimit on Redis's clock must never over-admit (main.mjs).
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { Ratelimit as PeerRatelimit } from "@upstash/ratelimit";
import { ours, peer, Ratelimit, Redis } from "./libraries.mjs";
import { redisTimeUs } from "./e2e.mjs";
import { alternate, cell } from "./measure.mjs";

/** A worker process; `run(round)` resolves to its answer; `end()` stops it. */
function worker(instance) {
  const child = spawn(process.execPath, [fileURLToPath(new URL("edges_worker.mjs", import.meta.url)), JSON.stringify(instance)], {
    stdio: ["pipe", "pipe", "inherit"],
    env: process.env,
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  return {
    async run(round) {
      child.stdin.write(`${JSON.stringify(round)}\n`);
      const { value, done } = await lines.next();
      if (done) throw new Error("an edges worker ended");
      return JSON.parse(value);
    },
    end: () => child.stdin.end(),
  };
}

/** Runs `jobs` in every worker of `workers` together, from 600 ms from now for `durationMs`; per job, every worker's results. */
async function together(workers, jobs, durationMs, callers) {
  const round = { jobs, startAt: Date.now() + 600, durationMs, callers };
  const answers = await Promise.all(workers.map((w) => w.run(round)));
  return jobs.map((_, index) => answers.map((answer) => answer.jobs[index]));
}

/**
 * Over-admission of one job's `results` (one per worker): for the windows, the admissions past
 * `limit` in every window (by the `reset` the answers name); for the buckets, past what they hold plus
 * their refills over the run (`limit` per `windowMs`).
 */
function overAdmission(algorithm, results, limit, windowMs) {
  const admitted = results.flatMap((result) => result.admitted);
  const reasons = results.reduce((sum, result) => sum + result.reasons, 0);
  const errors = results.reduce((sum, result) => sum + result.errors, 0);
  let over = 0;
  let windows = 0;
  if (algorithm.endsWith("Window")) {
    const perWindow = new Map();
    for (const reset of admitted) perWindow.set(reset, (perWindow.get(reset) ?? 0) + 1);
    windows = perWindow.size;
    for (const count of perWindow.values()) over += Math.max(0, count - limit);
  } else {
    const first = Math.min(...results.map((result) => result.firstAt));
    const last = Math.max(...results.map((result) => result.lastAt));
    const elapsed = Math.max(0, last - first);
    const most = algorithm === "tokenBucket"
      ? limit + limit * (Math.floor(elapsed / windowMs) + 1)
      : limit + Math.floor((elapsed * limit) / windowMs) + 1;
    over = Math.max(0, admitted.length - most);
  }
  return { admitted: admitted.length, over, windows, reasons, errors };
}

const ALGORITHMS = ["fixedWindow", "slidingWindow", "tokenBucket", "gcra"];
const PEER_ALGORITHMS = ["fixedWindow", "slidingWindow", "tokenBucket"];

/** Boundaries: per library and algorithm, the over-admission summed over `rounds` rounds. */
async function boundaries({ processes, callers, delayMs, windowMs, limit, durationMs, rounds, log }) {
  const workers = Array.from({ length: processes }, () => worker({ offset: 0, delay: delayMs }));
  const stamp = Date.now();
  const rows = Object.fromEntries(ALGORITHMS.map((algorithm) => [algorithm, { algorithm }]));
  try {
    for (let round = 0; round < rounds; round++) {
      for (const lib of ["edgelimit", "peer"]) {
        log(`edges: boundaries, ${lib}, round ${round + 1}`);
        const algorithms = lib === "peer" ? PEER_ALGORITHMS : ALGORITHMS;
        const jobs = algorithms.map((algorithm) => ({ lib, algorithm, limit, window: windowMs, prefix: `bench-edges-${lib}-${algorithm}-${stamp}-${round}` }));
        const results = await together(workers, jobs, durationMs, callers);
        algorithms.forEach((algorithm, index) => {
          const counted = overAdmission(algorithm, results[index], limit, windowMs);
          const sum = rows[algorithm][lib] ?? { admitted: 0, over: 0, windows: 0, reasons: 0, errors: 0 };
          for (const field of Object.keys(sum)) sum[field] += counted[field];
          rows[algorithm][lib] = sum;
        });
      }
    }
  } finally {
    for (const w of workers) w.end();
  }
  return { processes, callers, delayMs, windowMs, limit, durationMs, rounds, rows: Object.values(rows) };
}

/** Skew: per skew, per configuration and algorithm, the over-admission of an instance on time and one skewed, together. */
async function skew({ skewsMs, windowMs, limit, durationMs, callers, log }) {
  const stamp = Date.now();
  const configs = [
    ["Redis's clock", { lib: "edgelimit" }, ALGORITHMS],
    ["local clocks", { lib: "edgelimit", localClock: true }, ALGORITHMS],
    ["Redis's clock, leases", { lib: "edgelimit", lease: { tokens: Math.floor(limit / 10), ttl: windowMs } }, ALGORITHMS],
    ["peer", { lib: "peer" }, PEER_ALGORITHMS],
  ];
  const rows = [];
  for (const skewMs of skewsMs) {
    log(`edges: an instance ${skewMs} ms off`);
    const workers = [worker({ offset: 0, delay: 0 }), worker({ offset: skewMs, delay: 0 })];
    try {
      const jobs = [];
      for (const [name, config, algorithms] of configs) {
        for (const algorithm of algorithms) {
          jobs.push({ ...config, name, algorithm, limit, window: windowMs, prefix: `bench-skew-${name.replaceAll(/\W/g, "")}-${algorithm}-${stamp}-${skewMs}` });
        }
      }
      const results = await together(workers, jobs, Math.max(durationMs, Math.abs(skewMs) + 3 * windowMs), callers);
      const row = { skewMs, cells: {} };
      jobs.forEach((job, index) => {
        row.cells[`${job.name}|${job.algorithm}`] = overAdmission(job.algorithm, results[index], limit, windowMs);
      });
      row.reset = await resetRow(workers, skewMs, stamp);
      rows.push(row);
    } finally {
      for (const w of workers) w.end();
    }
  }
  return { skewsMs, windowMs, limit, durationMs, callers, configs: configs.map(([name, , algorithms]) => ({ name, algorithms })), rows };
}

/**
 * A reset by the skewed instance (the second worker) while the one on time holds leases: a fixed
 * window of RESET_LIMIT an hour leased `{ tokens: 100, ttl: 1 s }`; the one on time decides for 1.5 s,
 * the other resets at 0.5 s. Over-admission: what was admitted after the reset's moment past the limit.
 */
const RESET_LIMIT = 1000;
async function resetRow(workers, skewMs, stamp) {
  const prefix = `bench-skew-reset-${stamp}-${skewMs}`;
  const job = { lib: "edgelimit", algorithm: "fixedWindow", limit: RESET_LIMIT, window: "1 h", prefix, lease: { tokens: 100, ttl: "1 s" } };
  const round = { startAt: Date.now() + 600, durationMs: 1500, callers: 4 };
  const [onTime, skewed] = await Promise.all([
    workers[0].run({ ...round, jobs: [job] }),
    workers[1].run({ ...round, jobs: [{ ...job, reset: 500 }] }),
  ]);
  // The window is an hour: every admission names it. Before the reset the one on time admitted at
  // most the limit; after it, at most the limit again, less what live leases kept counted.
  const admitted = onTime.jobs[0].admitted.length;
  const { errors, reasons } = onTime.jobs[0];
  return { admitted, over: Math.max(0, admitted - 2 * RESET_LIMIT), reasons, errors: errors + skewed.jobs[0].errors };
}

/** The Redis clock's cost: client and Redis CPU per decision, Redis's clock beside the local one. */
async function clockCost({ url, token, callers, cellMs, rounds, log }) {
  const stamp = Date.now();
  const rows = [];
  for (const algorithm of ["fixedWindow", "slidingWindow"]) {
    log(`edges: the Redis clock's cost, ${algorithm}`);
    const make = (localClock) =>
      new Ratelimit({ redis: new Redis({ url, token }), limiter: Ratelimit[algorithm](1_000_000_000, "1000 h"), prefix: `bench-clock-${localClock}-${stamp}`, ephemeralCache: false, localClock });
    const limiters = { edgelimit: make(false), peer: make(true) }; // "peer": the local clock, for the ratio
    const keys = Array.from({ length: callers }, (_, i) => `user:${i}`);
    const cells = {};
    for (const [name, limiter] of Object.entries(limiters)) {
      cells[name] = async () => {
        const before = await redisTimeUs(url, token);
        const run = await cell((caller) => limiter.limit(keys[caller]), { callers, ms: cellMs });
        const redisUs = ((await redisTimeUs(url, token)) - before) / run.decisions;
        return { cpuUs: run.cpuUs, redisUs };
      };
    }
    for (const run of Object.values(cells)) await run(); // warm-up, not counted
    const result = await alternate(rounds, cells);
    rows.push({ algorithm, callers, redisClock: result.edgelimit, localClock: result.peer, ratio: result.ratio });
  }
  return { rows };
}

/**
 * The longer expiry's cost in Redis memory: `identifiers` identifiers decided in turn for `runMs` on a
 * fixed window of 1 s, by edgelimit and by the peer under prefixes of their own; then the keys alive
 * per identifier (SCAN) and the bytes each key takes (`used_memory` for 10,000 counters like them).
 */
async function memoryCost({ url, token, identifiers, runMs, log }) {
  const command = async (words) => {
    const response = await fetch(url, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: JSON.stringify(words) });
    return (await response.json()).result;
  };
  const usedMemory = async () => Number(/used_memory:(\d+)/.exec(await command(["INFO", "memory"]))[1]);
  const count = async (prefix) => {
    let cursor = "0";
    let keys = 0;
    do {
      const [next, found] = await command(["SCAN", cursor, "MATCH", `${prefix}:*`, "COUNT", "1000"]);
      cursor = next;
      keys += found.length;
    } while (cursor !== "0");
    return keys;
  };
  const stamp = Date.now();
  const alive = {};
  for (const lib of ["edgelimit", "peer"]) {
    log(`edges: keys alive, ${lib}`);
    const prefix = `bench-memory-${lib}-${stamp}`;
    const limiter = lib === "peer"
      ? peer({ url, token, limiter: PeerRatelimit.fixedWindow(1_000_000, "1 s"), prefix })
      : ours({ url, token, limiter: Ratelimit.fixedWindow(1_000_000, "1 s"), prefix });
    const end = Date.now() + runMs;
    while (Date.now() < end) {
      await Promise.all(Array.from({ length: identifiers }, (_, i) => limiter.limit(`id:${i}`)));
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    alive[lib] = (await count(prefix)) / identifiers;
  }
  // The bytes of one counter with an expiry, as the windows store them.
  const before = await usedMemory();
  const sample = 10_000;
  const words = ["EVAL", "for i = 1, tonumber(ARGV[1]) do redis.call('SET', KEYS[1] .. i, '17', 'PX', 60000) end", "1", `bench-memory-bytes-${stamp}:`, String(sample)];
  await command(words);
  const bytesPerKey = ((await usedMemory()) - before) / sample;
  return { identifiers, runMs, alive, bytesPerKey, lateMs: 10_000 };
}

/** Runs the section. */
export async function edgesSection({ url, token, boundaries: b, skew: s, clock: c, memory: m, log }) {
  return {
    boundaries: await boundaries({ ...b, log }),
    skew: await skew({ ...s, log }),
    clock: await clockCost({ url, token, ...c, log }),
    memory: await memoryCost({ url, token, ...m, log }),
  };
}
