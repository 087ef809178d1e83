// Issue 42's guarantee under real concurrency: four processes (tests/js/limits_worker.mjs) of 16 callers
// each, 64 concurrent callers on one hot identifier through the real gateway, with a set of two limits
// for every ordered pair of algorithms. In every window of each limit (named by the answers' `reset`),
// admitted <= that limit; and what each window limit's counters hold in Redis is exactly what the set
// admitted (a request the set denies is counted by neither), as is what the token bucket has given.
//
//   bash scripts/with_gateway.sh node --test tests/js/limits_processes.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { Redis as PeerRedis } from "@upstash/redis";
import "./edgelimit.mjs"; // links pkg/ for the workers
import { workerProcess } from "./worker_process.mjs";

const url = process.env.EDGELIMIT_TEST_URL;
const token = process.env.EDGELIMIT_TEST_TOKEN;
const skip = !url && "EDGELIMIT_TEST_URL is not set (run under scripts/with_gateway.sh)";
const PROCESSES = 4;
const CALLERS = 16;
const CALLS = 3;
const ALGORITHMS = ["fixedWindow", "slidingWindow", "tokenBucket", "gcra"];

test("64 callers in 4 processes never pass either limit of a set, and a denied request is counted by neither", { skip, timeout: 300_000 }, async () => {
  const workers = Array.from({ length: PROCESSES }, () => workerProcess("limits_worker.mjs"));
  const redis = new PeerRedis({ url, token, enableTelemetry: false });
  const run = `limits-processes-${Date.now()}-${Math.random().toString(36).slice(2)}`;
  try {
    for (const first of ALGORITHMS) {
      for (const second of ALGORITHMS) {
        const limits = [[first, 40], [second, 25]];
        const name = `${first} then ${second}`;
        const prefix = `${run}-${first}-${second}`;
        const answers = (await Promise.all(workers.map((w) => w.run({ limits, prefix, callers: CALLERS, calls: CALLS })))).flat();
        assert.equal(answers.length, PROCESSES * CALLERS * CALLS, name);
        assert.deepEqual(answers.filter((answer) => answer.reason !== null), [], `${name}: every answer decided by Redis`);
        const admitted = answers.filter((answer) => answer.success);
        assert.ok(admitted.length >= 20, `${name}: ${admitted.length} admitted`);
        for (const answer of answers) assert.equal(answer.success, answer.limits.every((limit) => limit.success), name);
        for (const [index, [algorithm, limit]] of limits.entries()) {
          const windowed = algorithm.endsWith("Window");
          const perWindow = new Map();
          for (const answer of admitted) {
            const window = windowed ? answer.limits[index].reset : 0;
            perWindow.set(window, (perWindow.get(window) ?? 0) + 1);
          }
          // GCRA refills one of 25 (or 40) an hour, continuously: at most one more over a run of minutes.
          const most = algorithm === "gcra" ? limit + 1 : limit;
          for (const [window, count] of perWindow) assert.ok(count <= most, `${name}, limit ${index}, window ${window}: ${count} of ${limit}`);
          const keyPrefix = `${prefix}-${index}:hot`;
          if (windowed) {
            // Every window counter holds what the set admitted in its window: the denied counted by neither.
            const keys = await redis.keys(`${keyPrefix}:*`);
            const counted = (await Promise.all(keys.map((key) => redis.get(key)))).reduce((sum, value) => sum + Number(value), 0);
            assert.equal(counted, admitted.length, `${name}, limit ${index}: counted in Redis`);
          } else if (algorithm === "tokenBucket") {
            const tokens = await redis.hget(keyPrefix, "tokens");
            assert.notEqual(tokens, null, `${name}, limit ${index}: the bucket is stored`);
            assert.equal(limit - Number(tokens), admitted.length, `${name}, limit ${index}: taken from the bucket`);
          }
        }
      }
    }
  } finally {
    for (const { child } of workers) child.kill();
  }
});
