// Drop-in: one test body, run with `@upstash/ratelimit` 2.2.0 + `@upstash/redis` and with edgelimit
// (pkg/, through its `node` export), against the same gateway and redis-server. Migrating is an import
// change, so both must give the same answers; and since both use the same keys, calls of the two
// libraries on one identifier share one limit.
//
//   bash scripts/with_gateway.sh node --test tests/js/dropin.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import * as peerRatelimit from "@upstash/ratelimit";
import * as peerRedis from "@upstash/redis";
import * as edgelimit from "./edgelimit.mjs";

const url = process.env.EDGELIMIT_TEST_URL;
const token = process.env.EDGELIMIT_TEST_TOKEN;
const skip = !url && "EDGELIMIT_TEST_URL is not set (run under scripts/with_gateway.sh)";

const libraries = {
  peer: { Ratelimit: peerRatelimit.Ratelimit, Redis: peerRedis.Redis },
  edgelimit: { Ratelimit: edgelimit.Ratelimit, Redis: edgelimit.Redis },
};

/** The limiters both libraries offer, with the same arguments. */
const limiters = {
  fixedWindow: (R) => R.fixedWindow(4, "1 h"),
  slidingWindow: (R) => R.slidingWindow(4, "1 h"),
  tokenBucket: (R) => R.tokenBucket(1, "1 h", 4),
  cachedFixedWindow: (R) => R.cachedFixedWindow(4, "1 h"),
};

const run = `dropin-${Date.now()}-${Math.random().toString(36).slice(2)}`;

/**
 * The test body: written once against the @upstash/ratelimit API, given either library's exports.
 * Returns every answer, without `pending` (awaited here) and with `reset` made relative to now.
 */
async function scenario({ Ratelimit, Redis }, limiter, prefix) {
  const redis = new Redis({ url, token });
  const ratelimit = new Ratelimit({ redis, limiter: limiter(Ratelimit), prefix, analytics: false });
  const answers = [];
  const record = async (label, promise) => {
    const { pending, reset, ...rest } = await promise;
    assert.ok(pending instanceof Promise, `${label}: pending is a Promise`);
    await pending;
    answers.push({ label, ...rest, reset: reset > Date.now() - 60_000 ? "future" : reset });
  };
  for (let i = 0; i < 5; i++) await record(`limit ${i}`, ratelimit.limit("user"));
  await record("other user", ratelimit.limit("other"));
  await record("rate 2", ratelimit.limit("bulk", { rate: 2 }));
  await record("rate 3 over", ratelimit.limit("bulk", { rate: 3 }));
  const { reset, ...remaining } = await ratelimit.getRemaining("bulk");
  answers.push({ label: "getRemaining", ...remaining });
  await ratelimit.resetUsedTokens("user");
  await record("after reset", ratelimit.limit("user"));
  return answers;
}

/**
 * Where edgelimit answers differently on purpose, `remaining` by step: the peer's faults (PROTOCOL.md)
 * and its `remaining: 0` on any denial. A rate of 3 with 2 left is denied by both; edgelimit says the 2
 * are still there (and a rate of 2 would pass), and its sliding window does not count the denied 3.
 */
const differences = {
  slidingWindow: {
    // The peer's sliding window checks the limit without the rate, then adds the denied 3 anyway.
    "rate 3 over": { peer: 0, edgelimit: 2 },
    getRemaining: { peer: 0, edgelimit: 2 },
  },
  tokenBucket: {
    "rate 3 over": { peer: 0, edgelimit: 2 },
  },
  cachedFixedWindow: {
    // The peer's remaining goes negative, and its local count keeps the denied rate it never sent.
    "limit 4": { peer: -1, edgelimit: 0 },
    "rate 3 over": { peer: -1, edgelimit: 2 },
    getRemaining: { peer: 0, edgelimit: 2 },
  },
};

for (const [name, limiter] of Object.entries(limiters)) {
  test(`${name}: @upstash/ratelimit and edgelimit answer the same scenario the same`, { skip }, async () => {
    const peer = await scenario(libraries.peer, limiter, `${run}:peer:${name}`);
    const ours = await scenario(libraries.edgelimit, limiter, `${run}:edgelimit:${name}`);
    for (const [label, expected] of Object.entries(differences[name] ?? {})) {
      const [p, o] = [peer.find((a) => a.label === label), ours.find((a) => a.label === label)];
      assert.deepEqual([p.remaining, o.remaining], [expected.peer, expected.edgelimit], `${label}: the known difference`);
      delete p.remaining;
      delete o.remaining;
    }
    assert.deepEqual(ours, peer);
  });
}

for (const name of ["fixedWindow", "slidingWindow", "tokenBucket"]) {
  test(`${name}: alternating calls of both libraries on one identifier share one limit`, { skip }, async () => {
    const prefix = `${run}:mixed:${name}`;
    const make = ({ Ratelimit, Redis }) =>
      new Ratelimit({
        redis: new Redis({ url, token }),
        limiter: limiters[name](Ratelimit),
        prefix,
        ephemeralCache: false,
        analytics: false,
      });
    const both = [make(libraries.peer), make(libraries.edgelimit)];
    const answers = [];
    for (let i = 0; i < 8; i++) {
      const { success, remaining, pending } = await both[i % 2].limit("shared");
      await pending;
      answers.push([success, remaining]);
    }
    assert.deepEqual(answers.map(([success]) => success), [true, true, true, true, false, false, false, false]);
    assert.deepEqual(answers.slice(0, 4).map(([, remaining]) => remaining), [3, 2, 1, 0]);
    for (const ratelimit of both) assert.equal((await ratelimit.getRemaining("shared")).remaining, 0);
  });
}

for (const name of ["fixedWindow", "slidingWindow", "tokenBucket"]) {
  test(`${name}: resetUsedTokens of either library gives the other's usage back`, { skip }, async () => {
    const make = ({ Ratelimit, Redis }) =>
      new Ratelimit({
        redis: new Redis({ url, token }),
        limiter: limiters[name](Ratelimit),
        prefix: `${run}:reset:${name}`,
        ephemeralCache: false,
        analytics: false,
      });
    const [peer, ours] = [make(libraries.peer), make(libraries.edgelimit)];
    const remaining = async () => [(await peer.getRemaining("u")).remaining, (await ours.getRemaining("u")).remaining];
    for (const [user, resetter] of [[peer, ours], [ours, peer]]) {
      await (await user.limit("u", { rate: 3 })).pending;
      assert.deepEqual(await remaining(), [1, 1], "3 of 4 used");
      await resetter.resetUsedTokens("u");
      assert.deepEqual(await remaining(), [4, 4], "all 4 back");
    }
  });
}

test("a dynamic limit set by @upstash/ratelimit applies to edgelimit, and the other way round", { skip }, async () => {
  const prefix = `${run}:dynamic`;
  const make = ({ Ratelimit, Redis }) =>
    new Ratelimit({
      redis: new Redis({ url, token }),
      limiter: Ratelimit.fixedWindow(2, "1 h"),
      prefix,
      dynamicLimits: true,
      ephemeralCache: false,
      analytics: false,
    });
  const [peer, ours] = [make(libraries.peer), make(libraries.edgelimit)];
  await peer.setDynamicLimit({ limit: 5 });
  assert.deepEqual(await ours.getDynamicLimit(), { dynamicLimit: 5 });
  const answers = [];
  for (let i = 0; i < 6; i++) answers.push((await ours.limit("u")).success);
  assert.deepEqual(answers, [true, true, true, true, true, false]);

  await ours.setDynamicLimit({ limit: 7 });
  assert.deepEqual(await peer.getDynamicLimit(), { dynamicLimit: 7 });
  assert.equal((await peer.limit("u")).success, true, "the peer sees 7 as well (6 used)");
  await ours.setDynamicLimit({ limit: false });
  assert.deepEqual(await peer.getDynamicLimit(), { dynamicLimit: null });

  // A limit of 0 pauses every identifier in both: no error, so no fail-open admission either.
  await peer.setDynamicLimit({ limit: 0 });
  const paused = await ours.limit("fresh");
  assert.deepEqual(
    [paused.success, paused.limit, paused.remaining, paused.reason],
    [false, 0, 0, undefined],
  );
  const { remaining, limit } = await ours.getRemaining("fresh");
  assert.deepEqual([remaining, limit], [0, 0]);
  await peer.setDynamicLimit({ limit: false });
  await ours.setDynamicLimit({ limit: 0 });
  assert.deepEqual(await peer.getDynamicLimit(), { dynamicLimit: 0 });
  assert.equal((await peer.limit("other")).success, false, "the peer pauses too");
  await ours.setDynamicLimit({ limit: false });
  assert.equal((await ours.limit("fresh")).success, true, "the configured limit again");
});
