// One process of tests/js/limits_processes.test.mjs: for each round the test sends (one JSON line), a
// Ratelimit with a set of two limits on one hot identifier, `callers` concurrent callers deciding
// `calls` times each; it answers one JSON line, each answer's success and its limits' success and reset.
//
//   node tests/js/limits_worker.mjs   (EDGELIMIT_TEST_URL, _TOKEN set; rounds on stdin)
import { createInterface } from "node:readline";
import { Ratelimit, Redis } from "./edgelimit.mjs";

const url = process.env.EDGELIMIT_TEST_URL;
const token = process.env.EDGELIMIT_TEST_TOKEN;

const limiters = {
  fixedWindow: (limit) => Ratelimit.fixedWindow(limit, "1 h"),
  slidingWindow: (limit) => Ratelimit.slidingWindow(limit, "1 h"),
  tokenBucket: (limit) => Ratelimit.tokenBucket(1, "1 h", limit),
  gcra: (limit) => Ratelimit.gcra(limit, "1 h"),
};

for await (const line of createInterface({ input: process.stdin })) {
  const { limits, prefix, callers, calls } = JSON.parse(line);
  const ratelimit = new Ratelimit({
    redis: new Redis({ url, token }),
    prefix: `${prefix}-0`,
    limiter: limits.map(([algorithm, limit], index) =>
      index === 0 ? limiters[algorithm](limit) : { limiter: limiters[algorithm](limit), prefix: `${prefix}-${index}` }),
    ephemeralCache: false,
  });
  const answers = [];
  await Promise.all(Array.from({ length: callers }, async () => {
    for (let i = 0; i < calls; i++) {
      const { success, reason, limits: each } = await ratelimit.limit("hot");
      answers.push({ success, reason: reason ?? null, limits: each.map(({ success, reset }) => ({ success, reset })) });
    }
  }));
  process.stdout.write(`${JSON.stringify(answers)}\n`);
}
