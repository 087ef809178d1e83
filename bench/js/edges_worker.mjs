// One process of the edges section (edges.mjs): an instance whose clock is `offset` ms off the real one
// (`Date.now()` moved: behind when negative) and whose every request waits from 0 to twice `delay` ms
// (`delay` on average) before it leaves (the global `fetch`, which both libraries send with, wrapped),
// running the rounds it is sent on
// stdin, one JSON line each: `{ jobs, startAt, durationMs, callers }`, each job `{ lib, algorithm,
// limit, window, prefix, lease?, localClock?, reset? }` deciding on one hot identifier with `callers`
// loops from `startAt` (real ms) for `durationMs` (a job with `reset` only resets the identifier, once,
// at `startAt + reset`). It answers one JSON line per round: per job, the `reset` of every admission,
// how many answers the algorithm did not decide (`reason`) and how many calls threw, and when (real ms)
// its first request left and its last answer came.
import { createInterface } from "node:readline";
import { Ratelimit as PeerRatelimit } from "@upstash/ratelimit";
import { Redis as PeerRedis } from "@upstash/redis";
import { Ratelimit, Redis } from "./libraries.mjs";

const { offset, delay } = JSON.parse(process.argv[2]);
const realNow = Date.now.bind(Date);
Date.now = () => realNow() + offset;
const realFetch = globalThis.fetch;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
if (delay > 0) globalThis.fetch = async (target, init) => (await sleep(Math.random() * 2 * delay), realFetch(target, init));
const url = process.env.EDGELIMIT_TEST_URL;
const token = process.env.EDGELIMIT_TEST_TOKEN;

const limiters = {
  fixedWindow: (R, limit, window) => R.fixedWindow(limit, window),
  slidingWindow: (R, limit, window) => R.slidingWindow(limit, window),
  tokenBucket: (R, limit, window) => R.tokenBucket(limit, window, limit),
  gcra: (R, limit, window) => R.gcra(limit, window),
};

/** A limiter of `job`: edgelimit, or the peer, neither with an ephemeral cache (every decision is its algorithm's). */
function make({ lib, algorithm, limit, window: length, prefix, lease, localClock }) {
  // The peer takes durations as strings only.
  const window = typeof length === "number" ? `${length} ms` : length;
  if (lib === "peer") {
    return new PeerRatelimit({
      redis: new PeerRedis({ url, token, enableTelemetry: false }),
      limiter: limiters[algorithm](PeerRatelimit, limit, window),
      prefix,
      ephemeralCache: false,
      analytics: false,
    });
  }
  const options = { redis: new Redis({ url, token }), limiter: limiters[algorithm](Ratelimit, limit, window), prefix, ephemeralCache: false };
  if (lease) options.lease = lease;
  if (localClock) options.localClock = true;
  return new Ratelimit(options);
}

async function runJob(job, { startAt, durationMs, callers }) {
  const ratelimit = make(job);
  const result = { admitted: [], reasons: 0, errors: 0, firstAt: Infinity, lastAt: 0 };
  if (job.reset !== undefined) {
    await sleep(startAt + job.reset - realNow());
    await ratelimit.resetUsedTokens("hot").catch(() => result.errors++);
    return result;
  }
  await sleep(startAt - realNow());
  await Promise.all(Array.from({ length: callers }, async () => {
    for (let calls = 1; realNow() < startAt + durationMs; calls++) {
      // Answers with no request (a lease's, the ephemeral cache's) settle at once: let timers and I/O
      // run now and then, or this loop would starve every other job of the process.
      if (calls % 16 === 0) await new Promise((resolve) => setImmediate(resolve));
      result.firstAt = Math.min(result.firstAt, realNow());
      try {
        const { success, reset, reason, pending } = await ratelimit.limit("hot");
        await pending;
        if (reason !== undefined && reason !== "cacheBlock") result.reasons++;
        else if (success) result.admitted.push(reset);
      } catch {
        result.errors++;
        await sleep(10);
      }
      result.lastAt = realNow();
    }
  }));
  await ratelimit.returnLeases?.();
  return result;
}

for await (const line of createInterface({ input: process.stdin })) {
  const round = JSON.parse(line);
  const jobs = await Promise.all(round.jobs.map((job) => runJob(job, round)));
  process.stdout.write(`${JSON.stringify({ jobs })}\n`);
}
