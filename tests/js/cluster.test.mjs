// The package on a Redis Cluster (tests/js/cluster.mjs: six redis-servers behind the gateway's
// `--redis-cluster`): with `keys: "cluster"` every algorithm admits exactly its limit under concurrent
// calls and identifiers spread over the masters; without it, the cluster's CROSSSLOT refusal rejects
// the call with a message naming the option, whatever the fail mode; a bad `keys` throws; the keys
// every identifier shares are reached beside the script: the deny list in the decision's request
// (counted, as @upstash/ratelimit counts it), the analytics event in `pending`, read back by
// @upstash/core-analytics, the dynamic limit by a GET first (MultiRegionRatelimit's too, in each region).
//
//   bash scripts/with_gateway.sh node --test tests/js/cluster.test.mjs
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { Analytics } from "@upstash/core-analytics";
import * as peerRedis from "@upstash/redis";
import { MultiRegionRatelimit, Ratelimit, Redis } from "./edgelimit.mjs";
import { startCluster } from "./cluster.mjs";
import { countingFetch } from "./counting_fetch.mjs";

const noGateway = !process.env.EDGELIMIT_GATEWAY_BIN && "EDGELIMIT_GATEWAY_BIN is not set (run under scripts/with_gateway.sh)";

/** A fresh prefix per test, so tests never share keys. */
const prefix = () => `cluster-js-${Date.now()}-${Math.random().toString(36).slice(2)}`;

const CALLERS = 64;
const LIMIT = 10;

/** One limiter of each algorithm, `LIMIT` an hour. */
const limiters = (Class) => ({
  fixedWindow: Class.fixedWindow(LIMIT, "1 h"),
  slidingWindow: Class.slidingWindow(LIMIT, "1 h"),
  tokenBucket: Class.tokenBucket(1, "1 h", LIMIT),
  gcra: Class.gcra(LIMIT, "1 h"),
});

let cluster;
before(async () => {
  if (!noGateway) cluster = await startCluster();
});
after(async () => {
  await cluster?.close();
});

/** How many of `CALLERS` concurrent calls of `call` were admitted; every answer came from Redis. */
async function admitted(call) {
  const answers = await Promise.all(Array.from({ length: CALLERS }, call));
  for (const answer of answers) assert.equal(answer.reason, undefined, JSON.stringify(answer));
  await Promise.all(answers.map((answer) => answer.pending));
  return answers.filter((answer) => answer.success).length;
}

test("a bad `keys` throws, naming the option and the value", () => {
  const limiter = Ratelimit.fixedWindow(1, "1 s");
  assert.throws(() => new Ratelimit({ limiter, keys: "clustered" }), (error) => {
    assert.ok(error instanceof RangeError, error.message);
    assert.ok(error.message.includes("`keys`") && error.message.includes('"clustered"'), error.message);
    assert.ok(error.message.includes('"upstash" or "cluster"'), error.message);
    return true;
  });
  assert.throws(() => new Ratelimit({ limiter, keys: 1 }), TypeError);
  assert.throws(() => new MultiRegionRatelimit({ redis: [{ url: "http://127.0.0.1:9", token: "t" }], limiter: Ratelimit.fixedWindow(1, "1 s"), keys: "Cluster" }), RangeError);
  assert.throws(() => new Ratelimit({ limiter, key: "cluster" }), /did you mean `keys`\?/);
  // Both values are accepted.
  new Ratelimit({ limiter, keys: "upstash" });
  new Ratelimit({ limiter, keys: "cluster" });
});

/** Waits for the next hour when less than `spanMs` is left of this one, so that a test shorter than that writes its events in one hourly bucket. */
async function inOneHourFor(spanMs) {
  const left = 3_600_000 - (Date.now() % 3_600_000);
  if (left < spanMs) await new Promise((resolve) => setTimeout(resolve, left + 100));
}

test("with `keys: \"cluster\"`, the deny list is checked in the decision's request and counted, and analytics are written in `pending`", { skip: noGateway }, async () => {
  await inOneHourFor(20_000);
  const name = prefix();
  const admin = new peerRedis.Redis({ url: cluster.url, token: cluster.token, enableTelemetry: false });
  await admin.sadd(`${name}:denyList:all`, "6.6.6.6", "bad-id");
  const counter = countingFetch();
  const ratelimit = new Ratelimit({
    redis: new Redis({ url: cluster.url, token: cluster.token, fetch: counter.fetch }),
    limiter: Ratelimit.fixedWindow(3, "1 h"),
    prefix: name,
    keys: "cluster",
    enableProtection: true,
    analytics: true,
    ephemeralCache: false,
  });
  await (await ratelimit.limit("warm-up")).pending;
  await ratelimit.getRemaining("mallory"); // loads the script on mallory's master: EVALSHA, then EVAL
  counter.requests = 0;
  counter.bodies = [];
  const denied = await ratelimit.limit("mallory", { ip: "6.6.6.6" });
  assert.equal(denied.success, false);
  assert.equal(denied.reason, "denyList");
  assert.equal(denied.deniedValue, "6.6.6.6");
  assert.equal(denied.limit, 3);
  await denied.pending;
  assert.equal(counter.requests, 2, "the decision with the deny list, then the event");
  const [decision, event] = counter.bodies.map((body) => JSON.parse(body).map((command) => command[0]));
  assert.deepEqual(decision, ["EVALSHA", "SMISMEMBER"], "the deny list travels with the decision");
  assert.deepEqual(event, ["ZINCRBY"]);
  assert.equal((await ratelimit.getRemaining("mallory")).remaining, 2, "counted, as the peer counts it");
  counter.requests = 0;
  const remembered = await ratelimit.limit("mallory", { ip: "6.6.6.6" });
  assert.equal(remembered.reason, "denyList");
  await remembered.pending;
  assert.equal(counter.requests, 1, "remembered: only its event is written");
  for (let i = 0; i < 4; i++) {
    const answer = await ratelimit.limit("alice");
    assert.equal(answer.success, i < 3);
    assert.equal(answer.reason, undefined);
    await answer.pending;
  }
  assert.equal((await ratelimit.limit("bad-id")).deniedValue, "bad-id");

  const reader = new Analytics({ redis: admin, window: "1h", prefix: name });
  const bucket = await reader.aggregateBucket("events", "identifier");
  assert.deepEqual(bucket.identifier, { "warm-up": 1, "6.6.6.6": 2, alice: 4, "bad-id": 1 });
  const outcomes = await reader.aggregateBucket("events", "success");
  assert.deepEqual(outcomes.success, { true: 4, false: 1, denied: 3 });
});

test("with `keys: \"cluster\"`, dynamic limits are read first and rounded as the scripts round them", { skip: noGateway }, async () => {
  const admin = new peerRedis.Redis({ url: cluster.url, token: cluster.token, enableTelemetry: false });
  const redis = new Redis({ url: cluster.url, token: cluster.token });
  for (const [limiter, admits] of [[Ratelimit.slidingWindow(10, "1 h"), 3], [Ratelimit.fixedWindow(10, "1 h"), 2]]) {
    const name = prefix();
    const ratelimit = new Ratelimit({ redis, limiter, prefix: name, keys: "cluster", dynamicLimits: true, ephemeralCache: false });
    await admin.set(`${name}:dynamic:global`, "2.5");
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push(await ratelimit.limit("user"));
    assert.deepEqual(answers.map((answer) => answer.success), [0, 1, 2, 3, 4].map((i) => i < admits), `${admits} under 2.5`);
    assert.ok(answers.every((answer) => answer.limit === admits && answer.reason === undefined), JSON.stringify(answers));
    for (const paused of ["0", "-1"]) {
      await admin.set(`${name}:dynamic:global`, paused);
      const answer = await ratelimit.limit("paused");
      assert.equal(answer.success, false, paused);
      assert.equal(answer.limit, 0, paused);
    }
    await ratelimit.setDynamicLimit({ limit: 4 });
    assert.deepEqual(await ratelimit.getDynamicLimit(), { dynamicLimit: 4 });
    const answer = await ratelimit.limit("paused");
    assert.equal(answer.success, true);
    assert.equal(answer.limit, 4);
    await ratelimit.setDynamicLimit({ limit: false });
    assert.equal((await ratelimit.limit("paused")).limit, 10);
  }
});

test("with `keys: \"cluster\"`, every algorithm admits exactly its limit, over every master", { skip: noGateway }, async () => {
  const redis = new Redis({ url: cluster.url, token: cluster.token });
  const ids = ["a", "b", "c", "d", "e", "f"];
  for (const [name, limiter] of Object.entries(limiters(Ratelimit))) {
    const ratelimit = new Ratelimit({ redis, limiter, prefix: prefix(), keys: "cluster", ephemeralCache: false });
    // One peek per identifier, one after the other, loads the script on each master: the first calls'
    // EVALs, coalesced, would otherwise carry every caller's copy of the script in one request, past
    // the gateway's 1 MiB body limit (the fail mode would answer them).
    for (const id of ids) assert.equal((await ratelimit.limit(`user:${id}`, { rate: 0 })).reason, undefined);
    const counts = await Promise.all(ids.map((id) => admitted(() => ratelimit.limit(`user:${id}`))));
    assert.deepEqual(counts, Array(ids.length).fill(LIMIT), name);
    assert.equal((await ratelimit.getRemaining("user:a")).remaining, 0, name);
    await ratelimit.resetUsedTokens("user:a");
    assert.equal((await ratelimit.getRemaining("user:a")).remaining, LIMIT, `${name} after a reset`);
  }
  const sizes = await Promise.all((await cluster.masters()).map((port) => cluster.dbsize(port)));
  assert.equal(sizes.length, 3);
  assert.ok(sizes.every((keys) => keys > 0), `keys per master: ${sizes}`);
});

test("MultiRegionRatelimit with `keys: \"cluster\"` admits exactly its limit", { skip: noGateway }, async () => {
  for (const [name, limiter] of Object.entries(limiters(Ratelimit))) {
    const ratelimit = new MultiRegionRatelimit({ redis: [{ url: cluster.url, token: cluster.token }], limiter, prefix: prefix(), keys: "cluster", ephemeralCache: false });
    assert.equal(await admitted(() => ratelimit.limit("user:a")), LIMIT, name);
  }
});

test("MultiRegionRatelimit with `keys: \"cluster\"` and `dynamicLimits` applies each region's stored limit, read first", { skip: noGateway }, async () => {
  const admin = new peerRedis.Redis({ url: cluster.url, token: cluster.token, enableTelemetry: false });
  const name = prefix();
  const ratelimit = new MultiRegionRatelimit({ redis: [{ url: cluster.url, token: cluster.token }], limiter: Ratelimit.fixedWindow(10, "1 h"), prefix: name, keys: "cluster", dynamicLimits: true, ephemeralCache: false });
  await admin.set(`${name}:dynamic:global`, "3");
  const answers = [];
  for (let i = 0; i < 5; i++) answers.push(await ratelimit.limit("user"));
  assert.deepEqual(answers.map((answer) => answer.success), [true, true, true, false, false]);
  assert.ok(answers.every((answer) => answer.limit === 3 && answer.reason === undefined), JSON.stringify(answers));
  await ratelimit.setDynamicLimit({ limit: 0 });
  const paused = await ratelimit.limit("paused");
  assert.equal(paused.success, false);
  assert.equal(paused.limit, 0);
  assert.deepEqual(await ratelimit.getDynamicLimit(), { dynamicLimit: 0 });
  await ratelimit.setDynamicLimit({ limit: false });
  assert.equal((await ratelimit.limit("paused")).limit, 10);
});

test("without `keys: \"cluster\"`, the CROSSSLOT refusal rejects naming the option, whatever the fail mode", { skip: noGateway }, async () => {
  const redis = new Redis({ url: cluster.url, token: cluster.token });
  for (const failMode of ["open", "closed"]) {
    const ratelimit = new Ratelimit({ redis, limiter: Ratelimit.slidingWindow(LIMIT, "1 h"), prefix: prefix(), failMode });
    await assert.rejects(ratelimit.limit("user:a"), (error) => {
      assert.ok(error.message.includes("CROSSSLOT"), error.message);
      assert.ok(error.message.includes('keys: "cluster"'), error.message);
      return true;
    });
  }
});
