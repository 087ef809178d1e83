// Analytics (`analytics: true`): every decision recorded as `@upstash/core-analytics` records it, so that
// its own reader (and the Upstash console) counts what edgelimit decided; the same members as
// `@upstash/ratelimit` 2.2.0 writes, byte for byte; written in the same request as the decision, or in
// `pending` when the answer needs no request.
//
//   bash scripts/with_gateway.sh node --test tests/js/analytics.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { Analytics } from "@upstash/core-analytics";
import * as peerRatelimit from "@upstash/ratelimit";
import * as peerRedis from "@upstash/redis";
import { Ratelimit, Redis } from "./edgelimit.mjs";
import { countingFetch } from "./counting_fetch.mjs";

const url = process.env.EDGELIMIT_TEST_URL;
const token = process.env.EDGELIMIT_TEST_TOKEN;
const closedUrl = process.env.EDGELIMIT_TEST_CLOSED_URL;
const skip = !url && "EDGELIMIT_TEST_URL is not set (run under scripts/with_gateway.sh)";

const run = `analytics-${Date.now()}-${Math.random().toString(36).slice(2)}`;
const redis = url && new peerRedis.Redis({ url, token, enableTelemetry: false });
/** The same, handing replies over as Redis sent them: members are the bytes stored. */
const raw = url && new peerRedis.Redis({ url, token, enableTelemetry: false, automaticDeserialization: false });
const HOUR = 3_600_000;

/** core-analytics' reader, configured as @upstash/ratelimit configures it. */
const reader = (prefix) => new Analytics({ redis, window: "1h", prefix });

/** Every event recorded under `prefix` in the last two hourly buckets: member -> count. */
async function events(prefix) {
  const bucket = Math.floor(Date.now() / HOUR) * HOUR;
  const counts = {};
  for (const time of [bucket - HOUR, bucket]) {
    const found = await raw.zrange(`${prefix}:events:${time}`, 0, -1, { withScores: true });
    for (let i = 0; i < found.length; i += 2) counts[found[i]] = (counts[found[i]] ?? 0) + Number(found[i + 1]);
  }
  return counts;
}

test("core-analytics' reader reports exactly the decisions edgelimit made, each written with its decision", { skip }, async () => {
  const prefix = `${run}:reader`;
  const counter = countingFetch();
  const ratelimit = new Ratelimit({
    redis: new Redis({ url, token, fetch: counter.fetch }),
    limiter: Ratelimit.fixedWindow(3, "1 h"),
    prefix,
    analytics: true,
    ephemeralCache: false,
  });
  await ratelimit.limit("warm-up"); // loads the script: EVALSHA, then EVAL
  counter.requests = 0;
  const decisions = { alice: 7, bob: 2, carol: 4 };
  for (const [identifier, times] of Object.entries(decisions)) {
    for (let i = 0; i < times; i++) {
      const before = counter.requests;
      const { success } = await ratelimit.limit(identifier); // `pending` not awaited: nothing is left in it
      assert.equal(counter.requests - before, 1, "the event travels in the decision's request");
      assert.equal(success, i < 3);
    }
  }
  const usage = await reader(prefix).getAllowedBlocked("events", 2);
  assert.deepEqual(usage, {
    "warm-up": { success: 1, blocked: 0 },
    alice: { success: 3, blocked: 4 },
    bob: { success: 2, blocked: 0 },
    carol: { success: 3, blocked: 1 },
  });
});

test("edgelimit and @upstash/ratelimit record the same members for the same decisions, geo and deny list included", { skip }, async () => {
  const scenario = async (R, Redis, prefix) => {
    const ratelimit = new R.Ratelimit({
      redis: new Redis({ url, token }),
      limiter: R.Ratelimit.slidingWindow(2, "1 h"),
      prefix,
      analytics: true,
      enableProtection: true,
      ephemeralCache: false,
    });
    await redis.set(`${prefix}:ipDenyListStatus`, "disabled"); // so the peer downloads nothing
    await redis.sadd(`${prefix}:denyList:all`, `${prefix}-denied-ip`);
    const calls = [
      ["plain", undefined],
      ["plain", { rate: 1 }],
      ["plain", {}],
      ["vercel", { geo: { country: "DE", city: "Berlin", region: "BE", ip: "198.51.100.4" } }],
      ["cloudflare", { cf: { country: "FR", colo: "CDG", asn: 3215, isEUCountry: "1" } }],
      ["odd \"name\" / é", { geo: { country: "JP" } }],
      ["blocked", { ip: `${prefix}-denied-ip`, geo: { country: "US" } }],
    ];
    for (const [identifier, options] of calls) await (await ratelimit.limit(identifier, options)).pending;
    const found = await events(prefix);
    // The denied value carries the prefix: write it as the other library's would read.
    return Object.fromEntries(Object.entries(found).map(([member, count]) => [member.replaceAll(prefix, "<prefix>"), count]));
  };
  const peer = await scenario(peerRatelimit, peerRedis.Redis, `${run}:peer`);
  const ours = await scenario({ Ratelimit }, Redis, `${run}:ours`);
  assert.deepEqual(ours, peer);
  assert.equal(peer['{"identifier":"plain","success":false}'], 1, "3 calls on a limit of 2");
  assert.equal(peer['{"identifier":"<prefix>-denied-ip","success":"denied","country":"US"}'], 1);
});

test("an answer given without a request records its event in `pending`; a request's geo is read too", { skip }, async () => {
  const prefix = `${run}:pending`;
  const ratelimit = new Ratelimit({
    redis: new Redis({ url, token }),
    limiter: Ratelimit.fixedWindow(1, "1 h"),
    prefix,
    analytics: true,
  });
  await ratelimit.limit("u");
  await ratelimit.limit("u"); // denied by Redis: the ephemeral cache remembers it
  const blocked = await ratelimit.limit("u", { request: { cf: { country: "NL" } } });
  assert.equal(blocked.reason, "cacheBlock");
  assert.equal(await blocked.pending, undefined);
  assert.deepEqual(await events(prefix), {
    '{"identifier":"u","success":true}': 1,
    '{"identifier":"u","success":false}': 1,
    '{"identifier":"u","success":false,"country":"NL"}': 1,
  });

  // A value found in the deny list: its event (the value, "denied") is written by `pending`, alone.
  const protectedPrefix = `${prefix}:protected`;
  await redis.sadd(`${protectedPrefix}:denyList:all`, "203.0.113.5");
  const guarded = new Ratelimit({
    redis: new Redis({ url, token }),
    limiter: Ratelimit.fixedWindow(1, "1 h"),
    prefix: protectedPrefix,
    analytics: true,
    enableProtection: true,
  });
  const denied = await guarded.limit("v", { ip: "203.0.113.5", geo: { city: "Oslo" } });
  assert.deepEqual([denied.reason, denied.deniedValue], ["denyList", "203.0.113.5"]);
  await denied.pending;
  assert.deepEqual(await events(protectedPrefix), { '{"identifier":"203.0.113.5","success":"denied","city":"Oslo"}': 1 });
  const again = await guarded.limit("v", { ip: "203.0.113.5", geo: { city: "Oslo" } }); // remembered: no request
  await again.pending;
  assert.deepEqual(await events(protectedPrefix), { '{"identifier":"203.0.113.5","success":"denied","city":"Oslo"}': 2 });
});

test("cachedFixedWindow records the answers it gives locally in `pending`, beside its write", { skip }, async () => {
  const prefix = `${run}:cached`;
  const ratelimit = new Ratelimit({
    redis: new Redis({ url, token }),
    limiter: Ratelimit.cachedFixedWindow(3, "1 h"),
    prefix,
    analytics: true,
  });
  const answers = [];
  for (let i = 0; i < 5; i++) {
    const { success, pending } = await ratelimit.limit("c");
    await pending;
    answers.push(success);
  }
  assert.deepEqual(answers, [true, true, true, false, false]);
  assert.deepEqual(await events(prefix), {
    '{"identifier":"c","success":true}': 3,
    '{"identifier":"c","success":false}': 2,
  });
  assert.equal((await ratelimit.getRemaining("c")).remaining, 0, "the writes landed");
});

test("when Redis is unreachable the fail mode answers and `pending` still settles", { skip: !closedUrl && "EDGELIMIT_TEST_CLOSED_URL is not set" }, async () => {
  const ratelimit = new Ratelimit({
    redis: new Redis({ url: closedUrl, token: "t" }),
    limiter: Ratelimit.fixedWindow(1, "1 h"),
    analytics: true,
    enableProtection: true,
    failMode: "closed",
  });
  const answer = await ratelimit.limit("u", { ip: "198.51.100.5" });
  assert.deepEqual([answer.success, answer.reason], [false, "error"]);
  assert.equal(await answer.pending, undefined, "the lost event does not reject `pending`");
});
