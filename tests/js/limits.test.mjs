// Several limits in one Ratelimit (`limiter: [...]`, all or nothing) and dry runs (`dryRun`) in the npm
// package: beside the real @upstash/ratelimit instances a fleet already runs with the same prefixes, no
// limit is passed; the same traffic live and dry leaves the same Redis state, and the dry answers admit
// and say what live limits answered; the methods and rateLimitHeaders work on a set; bad input names
// the field.
//
//   bash scripts/with_gateway.sh node --test tests/js/limits.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { Ratelimit as PeerRatelimit } from "@upstash/ratelimit";
import { Redis as PeerRedis } from "@upstash/redis";
import { MultiRegionRatelimit, Ratelimit, Redis, rateLimitHeaders } from "./edgelimit.mjs";

const url = process.env.EDGELIMIT_TEST_URL;
const token = process.env.EDGELIMIT_TEST_TOKEN;
const skip = !url && "EDGELIMIT_TEST_URL is not set (run under scripts/with_gateway.sh)";
const run = `limits-${Date.now()}-${Math.random().toString(36).slice(2)}`;

/** Every key under `prefix`, its value (a string, or a hash as an object) and whether it expires. */
async function state(prefix) {
  const redis = new PeerRedis({ url, token, enableTelemetry: false, automaticDeserialization: false });
  const keys = (await redis.keys(`${prefix}*`)).sort();
  const entries = [];
  for (const key of keys) {
    const type = await redis.type(key);
    const value = type === "hash" ? await redis.hgetall(key) : await redis.get(key);
    entries.push([key.slice(prefix.length), value, (await redis.pttl(key)) !== -1]);
  }
  return entries;
}

const numbers = ({ success, limit, remaining, reset }) => ({ success, limit, remaining, reset });

/** Waits for the start of the next whole second, so that a few ms of decisions on a window of 1 s never straddle two. */
const nextSecond = () => new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() % 1000) + 10));

test("a set beside the @upstash/ratelimit instances of its prefixes never passes either limit", { skip }, async () => {
  const [fixed, sliding] = [`${run}:fleet-hour`, `${run}:fleet-burst`];
  const peerRedis = new PeerRedis({ url, token, enableTelemetry: false });
  const peers = [
    new PeerRatelimit({ redis: peerRedis, limiter: PeerRatelimit.fixedWindow(30, "1 h"), prefix: fixed, ephemeralCache: false, analytics: false }),
    new PeerRatelimit({ redis: peerRedis, limiter: PeerRatelimit.slidingWindow(20, "1 h"), prefix: sliding, ephemeralCache: false, analytics: false }),
  ];
  const ours = () =>
    new Ratelimit({
      redis: new Redis({ url, token }),
      prefix: fixed,
      limiter: [Ratelimit.fixedWindow(30, "1 h"), { limiter: Ratelimit.slidingWindow(20, "1 h"), prefix: sliding }],
      ephemeralCache: false,
    });
  const instances = [ours(), ours()];
  // Admitted by each limit: what its peer instance admitted, and what the sets admitted (both limits).
  const admittedBy = [0, 0];
  let admittedBySets = 0;
  const users = Array.from({ length: 8 }, (_, i) => i);
  await Promise.all(users.map(async (caller) => {
    for (let i = 0; i < 12; i++) {
      if (caller % 2 === 0) {
        const answer = await instances[caller % 4 === 0 ? 0 : 1].limit("hot");
        if (answer.success) admittedBySets += 1;
        assert.equal(answer.success, answer.limits.every((limit) => limit.success));
      } else {
        // What users of the peer do today: one instance per limit, awaited in turn.
        const first = await peers[0].limit("hot");
        const second = await peers[1].limit("hot");
        if (first.success) admittedBy[0] += 1;
        if (second.success) admittedBy[1] += 1;
      }
    }
  }));
  assert.ok(admittedBySets > 0, "the sets admitted some");
  assert.ok(admittedBySets + admittedBy[0] <= 30, `fixed window: ${admittedBySets} + ${admittedBy[0]} admitted of 30`);
  assert.ok(admittedBySets + admittedBy[1] <= 20, `sliding window: ${admittedBySets} + ${admittedBy[1]} admitted of 20`);
  // The keys are the peer's: both limits hold exactly the peer's keys, and no other.
  const keys = (await state(`${run}:fleet`)).map(([key]) => key);
  assert.ok(keys.every((key) => /^-(hour|burst):hot:\d+$/.test(key)), JSON.stringify(keys));
});

test("the same traffic live and dry leaves the same Redis state; dry answers admit and report the live ones", { skip }, async () => {
  const configs = {
    set: (prefix, dryRun) => ({ prefix, dryRun, limiter: [Ratelimit.fixedWindow(5, "1 h"), Ratelimit.slidingWindow(3, "1 h")] }),
    single: (prefix, dryRun) => ({ prefix, dryRun, limiter: Ratelimit.fixedWindow(3, "1 h") }),
    mixedItems: (prefix, dryRun) => ({ prefix, limiter: [Ratelimit.fixedWindow(5, "1 h"), { limiter: Ratelimit.slidingWindow(3, "1 h"), dryRun }] }),
  };
  for (const [name, config] of Object.entries(configs)) {
    const [livePrefix, dryPrefix] = [`${run}:${name}:live`, `${run}:${name}:dry`];
    const live = new Ratelimit({ redis: new Redis({ url, token }), ...config(livePrefix, false) });
    const dry = new Ratelimit({ redis: new Redis({ url, token }), ...config(dryPrefix, true) });
    for (const [step, rate] of [1, 1, 2, 1, 3, 1, -1, 1, 1, 0, 1].entries()) {
      const context = `${name}, step ${step}, rate ${rate}`;
      const liveAnswer = await live.limit("user", { rate });
      const dryAnswer = await dry.limit("user", { rate });
      assert.ok("live" in dryAnswer && !("live" in liveAnswer), context);
      if (name === "mixedItems") {
        // Beside a live limit, the dry one only reports: the live limit decides (or the ephemeral cache,
        // which remembers the live limit's denial and asks no store: no `limits` then).
        if (dryAnswer.reason === "cacheBlock") assert.equal(dryAnswer.success, false, context);
        else assert.equal(dryAnswer.success, dryAnswer.limits[0].success, context);
        continue;
      }
      assert.equal(dryAnswer.success, true, context);
      assert.deepEqual(numbers(dryAnswer.live), numbers(liveAnswer), context);
      assert.equal(dryAnswer.live.reason, liveAnswer.reason, context);
      assert.equal(dryAnswer.reason, liveAnswer.success ? liveAnswer.reason : "dryRun", context);
      assert.deepEqual(dryAnswer.limits?.map(numbers), liveAnswer.limits?.map(numbers), context);
    }
    if (name !== "mixedItems") assert.deepEqual(await state(dryPrefix), await state(livePrefix), name);
  }
});

test("a set's answers, getRemaining, resetUsedTokens and blockUntilReady, in Redis and in memory", { skip }, async () => {
  for (const redis of [new Redis({ url, token }), undefined]) {
    const where = redis ? "redis" : "memory";
    const ratelimit = new Ratelimit({
      redis,
      prefix: `${run}:methods:${where}`,
      limiter: [Ratelimit.slidingWindow(2, "1 s"), Ratelimit.tokenBucket(1, "1 h", 4)],
    });
    await nextSecond();
    const first = await ratelimit.limit("user");
    assert.equal(first.success, true, where);
    assert.deepEqual(first.limits.map(({ success, limit, remaining, dryRun }) => ({ success, limit, remaining, dryRun })), [
      { success: true, limit: 2, remaining: 1, dryRun: false },
      { success: true, limit: 4, remaining: 3, dryRun: false },
    ], where);
    assert.deepEqual([first.limit, first.remaining], [2, 1], `${where}: the least left binds`);
    await ratelimit.limit("user");
    const denied = await ratelimit.limit("user");
    assert.deepEqual([denied.success, denied.limit, denied.limits[1].remaining], [false, 2, 2], `${where}: counted by neither`);
    const left = await ratelimit.getRemaining("user");
    assert.deepEqual(left.limits.map(({ remaining, limit }) => [remaining, limit]), [[0, 2], [2, 4]], where);
    assert.deepEqual([left.remaining, left.limit], [0, 2], where);
    const waited = await ratelimit.blockUntilReady("user", 3000);
    assert.equal(waited.success, true, `${where}: waited for the second`);
    assert.equal(waited.limits[1].remaining, 1, where);
    await ratelimit.resetUsedTokens("user");
    const reset = await ratelimit.getRemaining("user");
    assert.deepEqual(reset.limits.map(({ remaining }) => remaining), [2, 4], where);
  }
});

test("each limit of a set reads the dynamic limit of its own prefix", { skip }, async () => {
  const [first, second] = [`${run}:dynamic`, `${run}:dynamic-day`];
  const ratelimit = new Ratelimit({
    redis: new Redis({ url, token }),
    prefix: first,
    dynamicLimits: true,
    ephemeralCache: false,
    limiter: [Ratelimit.slidingWindow(10, "1 h"), { limiter: Ratelimit.fixedWindow(20, "1 d"), prefix: second }],
  });
  // The second limit's, as an @upstash/ratelimit instance with its prefix stores it.
  const peer = new PeerRatelimit({ redis: new PeerRedis({ url, token, enableTelemetry: false }), limiter: PeerRatelimit.fixedWindow(20, "1 d"), prefix: second, dynamicLimits: true });
  await peer.setDynamicLimit({ limit: 1 });
  assert.deepEqual((await ratelimit.limit("user")).limits.map(({ success, limit }) => [success, limit]), [[true, 10], [true, 1]]);
  const denied = await ratelimit.limit("user");
  assert.deepEqual([denied.success, denied.limit, denied.limits[1].success], [false, 1, false]);
  await peer.setDynamicLimit({ limit: false });
  await ratelimit.setDynamicLimit({ limit: 0 });
  const paused = await ratelimit.limit("other");
  assert.deepEqual([paused.success, paused.limits[0].limit, paused.limits[1].limit], [false, 0, 20]);
  assert.deepEqual(await ratelimit.getDynamicLimit(), { dynamicLimit: 0 });
  await ratelimit.setDynamicLimit({ limit: false });
  assert.equal((await ratelimit.limit("other")).success, true);
});

test("rateLimitHeaders writes every live limit of a set as a policy, and dry ones when told", { skip }, async () => {
  const ratelimit = new Ratelimit({
    redis: new Redis({ url, token }),
    prefix: `${run}:headers`,
    limiter: [Ratelimit.fixedWindow(10, "1 s"), { limiter: Ratelimit.fixedWindow(1000, "1 d"), dryRun: true }],
  });
  const answer = await ratelimit.limit("user");
  const now = answer.limits[0].reset - 500;
  const window = ["1 s", "1 d"];
  assert.deepEqual(rateLimitHeaders(answer, { now, window, style: "draft-11" }), {
    RateLimit: '"0";r=9;t=1',
    "RateLimit-Policy": '"0";q=10;w=1',
  });
  const emitted = rateLimitHeaders(answer, { now, window, dryRun: "emit" });
  assert.equal(emitted["RateLimit-Policy"], "10;w=1, 1000;w=86400");
  assert.equal(emitted["RateLimit-Limit"], "10");
  assert.throws(() => rateLimitHeaders(answer, { window: "1 s" }), (error) => error instanceof TypeError && /`window`/.test(error.message));
  assert.throws(() => rateLimitHeaders(answer, { dryRun: "maybe" }), (error) => error instanceof RangeError && /`dryRun`/.test(error.message));
  const dry = new Ratelimit({ limiter: Ratelimit.fixedWindow(1, "1 h"), dryRun: true });
  await dry.limit("user");
  const overLimit = await dry.limit("user");
  assert.deepEqual([overLimit.success, overLimit.reason, overLimit.live.success], [true, "dryRun", false]);
  assert.deepEqual(rateLimitHeaders(overLimit), {});
  assert.equal(rateLimitHeaders(overLimit, { dryRun: "emit" })["RateLimit-Remaining"], "0");
});

test("bad sets and dry runs throw a TypeError or RangeError naming the field", () => {
  const hour = Ratelimit.fixedWindow(10, "1 h");
  const day = Ratelimit.fixedWindow(100, "1 d");
  const throwsNaming = (config, kind, field) =>
    assert.throws(() => new Ratelimit(config), (error) => {
      assert.ok(error instanceof kind, `${kind.name} expected, got ${error?.constructor?.name}: ${error?.message}`);
      assert.ok(error.message.includes(`\`${field}\``), `${error.message} names ${field}`);
      return true;
    }, field);
  throwsNaming({ limiter: [] }, RangeError, "limiter");
  throwsNaming({ limiter: Array.from({ length: 9 }, (_, i) => Ratelimit.fixedWindow(i + 1, "1 h")) }, RangeError, "limiter");
  throwsNaming({ limiter: [hour, Ratelimit.fixedWindow(10, "1 h")] }, TypeError, "limiter[1]");
  throwsNaming({ limiter: [hour, Ratelimit.cachedFixedWindow(5, "1 d")] }, TypeError, "limiter[1]");
  throwsNaming({ limiter: [hour, { limiter: day, prefix: "@upstash/ratelimit" }] }, TypeError, "limiter[1].prefix");
  throwsNaming({ prefix: "api", limiter: [hour, { limiter: day, prefix: "api:day" }] }, TypeError, "limiter[1].prefix");
  throwsNaming({ limiter: [{ limiter: hour, prefix: "x" }, day] }, TypeError, "limiter[0].prefix");
  throwsNaming({ limiter: [hour, { limiter: day, dryRun: "yes" }] }, TypeError, "limiter[1].dryRun");
  throwsNaming({ limiter: [hour, { limiter: "day" }] }, TypeError, "limiter");
  throwsNaming({ limiter: hour, dryRun: 1 }, TypeError, "dryRun");
  throwsNaming({ limiter: hour, dryRun: true, failMode: "closed" }, TypeError, "failMode");
  throwsNaming({ limiter: [hour, { limiter: day, dryRun: true }], dryRun: true, failMode: "closed" }, TypeError, "failMode");
  const redis = { url: "http://127.0.0.1:9", token: "t" };
  throwsNaming({ redis, limiter: [hour, day], lease: { tokens: 10, ttl: "1 s" } }, TypeError, "lease");
  throwsNaming({ redis, limiter: [hour, day], enableProtection: true }, TypeError, "enableProtection");
  throwsNaming({ redis, limiter: [hour, day], analytics: true }, TypeError, "analytics");
  assert.throws(() => new Ratelimit({ limiter: [hour, { limiter: day, perfix: "x" }] }), /unknown option `perfix` \(did you mean `prefix`\?\)/);
  assert.throws(() => new MultiRegionRatelimit({ redis: [redis], limiter: [hour, day] }), (error) => error instanceof TypeError && /`limiter`/.test(error.message));
  assert.throws(() => new MultiRegionRatelimit({ redis: [redis], limiter: hour, dryRun: true }), (error) => error instanceof TypeError && /`dryRun`/.test(error.message));
  // What may go together does.
  assert.ok(new Ratelimit({ limiter: [hour, { limiter: day, dryRun: true }], failMode: "closed" }));
  assert.ok(new Ratelimit({ limiter: [hour], dryRun: true }));
});

test("a set of one limit answers as that limit alone", async () => {
  const alone = new Ratelimit({ limiter: Ratelimit.slidingWindow(2, "1 h") });
  const set = new Ratelimit({ limiter: [Ratelimit.slidingWindow(2, "1 h")] });
  for (let i = 0; i < 3; i++) {
    const [a, b] = [await alone.limit("user"), await set.limit("user")];
    assert.deepEqual(Object.keys(b).sort(), Object.keys(a).sort());
    assert.deepEqual(numbers(b), numbers(a));
  }
});
