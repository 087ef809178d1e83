// Issue 40: a limit of N admits at most N at every window boundary, whatever the instances' clocks and
// however late their requests arrive. Four processes (tests/js/edges_worker.mjs), each with its own
// clock (one on time, one 60 ms behind, one 60 ms ahead, one 25 ms behind) and its own queue (two hold
// each request up to 40 and 15 ms after stamping it), hammer one hot identifier through the real
// gateway across at least four boundaries of 250 ms windows: every algorithm, with and without
// leases, in both key layouts, on Redis's clock (the default); and the windows on the instances' own
// clocks (`localClock: true`) too. Each admission is counted in the window its answer names (its
// `reset`): no window admits more than the limit. The token bucket and GCRA admit at most what they
// hold plus what they refill over the run.
//
//   bash scripts/with_gateway.sh node --test tests/js/edges.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import "./edgelimit.mjs"; // links pkg/ for the workers
import { workerProcess } from "./worker_process.mjs";

const url = process.env.EDGELIMIT_TEST_URL;
const skip = !url && "EDGELIMIT_TEST_URL is not set (run under scripts/with_gateway.sh)";

const WINDOW_MS = 250;
const LIMIT = 40;
/** The instances: their clocks' offsets and how long their queues hold a request, in ms. */
const INSTANCES = [
  { offset: 0, delay: 0 },
  { offset: -60, delay: 40 },
  { offset: 60, delay: 0 },
  { offset: -25, delay: 15 },
];

/** The rounds: [algorithm, lease, keys, localClock]. */
function rounds() {
  const all = [];
  for (const algorithm of ["fixedWindow", "slidingWindow", "tokenBucket", "gcra"]) {
    for (const lease of [undefined, { tokens: 10, ttl: WINDOW_MS }]) {
      for (const keys of ["upstash", "cluster"]) {
        all.push([algorithm, lease, keys, false]);
        if (algorithm.endsWith("Window")) all.push([algorithm, lease, keys, true]);
      }
    }
  }
  return all;
}

test("at every window boundary, whatever the clocks and the delays, no window admits past the limit", { skip }, async () => {
  const workers = INSTANCES.map((instance) => workerProcess("edges_worker.mjs", [JSON.stringify(instance)]));
  const run = `edges-${Date.now()}-${Math.random().toString(36).slice(2)}`;
  try {
    for (const [algorithm, lease, keys, localClock] of rounds()) {
      const name = `${algorithm} ${lease ? "leasing" : "plain"} ${keys}${localClock ? " localClock" : ""}`;
      const round = {
        algorithm,
        limit: LIMIT,
        window: WINDOW_MS,
        prefix: `${run}:${name.replaceAll(" ", ":")}`,
        keys,
        lease,
        localClock,
        startAt: Date.now() + 400,
        durationMs: 4.5 * WINDOW_MS,
        callers: 4,
      };
      const results = await Promise.all(workers.map((w) => w.run(round)));
      const reasons = results.flatMap((result) => result.reasons);
      assert.deepEqual(reasons, [], `${name}: every answer decided by the algorithm`);
      const admitted = results.flatMap((result) => result.admitted);
      if (algorithm.endsWith("Window")) {
        const perWindow = new Map();
        for (const reset of admitted) perWindow.set(reset, (perWindow.get(reset) ?? 0) + 1);
        const over = [...perWindow].filter(([, count]) => count > LIMIT);
        assert.deepEqual(over, [], `${name}: windows (by their reset) admitting past ${LIMIT}`);
        assert.ok(perWindow.size >= 5, `${name}: ${perWindow.size} windows, four boundaries at least`);
        assert.ok([...perWindow.values()].includes(LIMIT), `${name}: no window reached the limit: the test is not hot enough`);
      } else {
        const first = Math.min(...results.map((result) => result.firstAt));
        const last = Math.max(...results.map((result) => result.lastAt));
        const elapsed = last - first;
        // What the bucket holds, plus its refills over the run: whole steps of LIMIT per window for the
        // token bucket, one unit per WINDOW_MS / LIMIT for GCRA.
        const most = algorithm === "tokenBucket"
          ? LIMIT + LIMIT * (Math.floor(elapsed / WINDOW_MS) + 1)
          : LIMIT + Math.floor((elapsed * LIMIT) / WINDOW_MS) + 1;
        assert.ok(admitted.length <= most, `${name}: ${admitted.length} admitted in ${elapsed} ms, at most ${most}`);
        assert.ok(admitted.length >= 2 * LIMIT, `${name}: only ${admitted.length} admitted: the test is not hot enough`);
      }
    }
  } finally {
    for (const { child } of workers) child.stdin.end();
  }
});
