// One process of tests/js/edges.test.mjs: an instance with a clock of its own (`Date.now()` moved by
// `offset` ms: behind when negative, ahead when positive) and a queue of its own (each request held up
// to `delay` ms before it is sent, after the package stamped it), running the rounds the test sends,
// one JSON line each, on one hot identifier. For each round it answers one JSON line: the `reset` of
// every request admitted, the reasons of any answer the algorithm did not decide, and when (by the
// real clock) the first request left and the last answer came.
//
//   node tests/js/edges_worker.mjs '{"offset":-60,"delay":40}'   (EDGELIMIT_TEST_URL, _TOKEN set)
import { createInterface } from "node:readline";
import { Ratelimit, Redis } from "./edgelimit.mjs";

const { offset, delay } = JSON.parse(process.argv[2]);
const realNow = Date.now.bind(Date);
Date.now = () => realNow() + offset;
const url = process.env.EDGELIMIT_TEST_URL;
const token = process.env.EDGELIMIT_TEST_TOKEN;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const held = delay > 0 ? async (target, init) => (await sleep(Math.random() * delay), fetch(target, init)) : undefined;

const limiters = {
  fixedWindow: (limit, window) => Ratelimit.fixedWindow(limit, window),
  slidingWindow: (limit, window) => Ratelimit.slidingWindow(limit, window),
  tokenBucket: (limit, window) => Ratelimit.tokenBucket(limit, window, limit),
  gcra: (limit, window) => Ratelimit.gcra(limit, window),
};

for await (const line of createInterface({ input: process.stdin })) {
  const { algorithm, limit, window, prefix, keys, lease, localClock, startAt, durationMs, callers } = JSON.parse(line);
  const ratelimit = new Ratelimit({
    redis: new Redis({ url, token, fetch: held }),
    limiter: limiters[algorithm](limit, window),
    prefix,
    keys,
    lease,
    ...(localClock && { localClock }),
  });
  await sleep(startAt - realNow());
  const result = { admitted: [], reasons: [], firstAt: realNow(), lastAt: 0 };
  await Promise.all(Array.from({ length: callers }, async () => {
    for (let calls = 1; realNow() < startAt + durationMs; calls++) {
      // Answers with no request (a lease's, the ephemeral cache's) settle at once: let timers and I/O
      // run now and then, or this loop would starve the process.
      if (calls % 16 === 0) await new Promise((resolve) => setImmediate(resolve));
      const { success, reset, reason, pending } = await ratelimit.limit("hot");
      await pending;
      if (reason !== undefined && reason !== "cacheBlock") result.reasons.push(reason);
      else if (success) result.admitted.push(reset);
    }
  }));
  await ratelimit.returnLeases();
  result.lastAt = realNow();
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
