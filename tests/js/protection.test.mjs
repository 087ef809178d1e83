// Protection (`enableProtection`, the deny list the Upstash console manages) and the IP deny list,
// side by side with `@upstash/ratelimit` 2.2.0 on the same gateway and redis-server: both deny the same
// values, a list written by either is honoured by the other, and edgelimit checks the deny list in the
// same HTTP request as the limit, counting nothing for a denied value.
//
//   bash scripts/with_gateway.sh node --test tests/js/protection.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import * as peerRatelimit from "@upstash/ratelimit";
import * as peerRedis from "@upstash/redis";
import { Ratelimit, Redis } from "./edgelimit.mjs";
import { countingFetch } from "./counting_fetch.mjs";

const url = process.env.EDGELIMIT_TEST_URL;
const token = process.env.EDGELIMIT_TEST_TOKEN;
const skip = !url && "EDGELIMIT_TEST_URL is not set (run under scripts/with_gateway.sh)";

// The peer remembers denied values for a minute in one cache for the whole process: every test uses
// values of its own.
const run = `protect-${Date.now()}-${Math.random().toString(36).slice(2)}`;
const redis = url && new peerRedis.Redis({ url, token, enableTelemetry: false });

/** The fields of an answer that say what was decided (`pending` checked and left out). */
function decided(response) {
  assert.ok(response.pending instanceof Promise, "pending is a Promise");
  const { pending, ...rest } = response;
  return rest;
}

const limiters = {
  fixedWindow: (R) => R.fixedWindow(4, "1 h"),
  slidingWindow: (R) => R.slidingWindow(4, "1 h"),
  tokenBucket: (R) => R.tokenBucket(1, "1 h", 4),
  gcra: (R) => R.gcra(4, "1 h"),
};

for (const [name, limiter] of Object.entries(limiters)) {
  test(`${name}: values in the deny list set through @upstash/redis are denied in one request, counting nothing`, { skip }, async () => {
    const prefix = `${run}:deny:${name}`;
    const bad = { id: `${prefix}-bad-id`, ip: "203.0.113.66", userAgent: `${prefix}-agent`, country: "XX" };
    await redis.sadd(`${prefix}:denyList:all`, bad.id, bad.ip, bad.userAgent, bad.country);
    const counter = countingFetch();
    const ratelimit = new Ratelimit({
      redis: new Redis({ url, token, fetch: counter.fetch }),
      limiter: limiter(Ratelimit),
      prefix,
      enableProtection: true,
    });
    await ratelimit.limit("warm-up"); // loads the script: EVALSHA, then EVAL
    for (const [identifier, options, deniedValue] of [
      [bad.id, undefined, bad.id],
      ["u-ip", { ip: bad.ip }, bad.ip],
      ["u-agent", { ip: "198.51.100.1", userAgent: bad.userAgent }, bad.userAgent],
      ["u-country", { userAgent: "curl", country: bad.country, rate: 1 }, bad.country],
    ]) {
      counter.requests = 0;
      const denied = decided(await ratelimit.limit(identifier, options));
      assert.equal(counter.requests, 1, `${identifier}: one HTTP request`);
      assert.deepEqual(denied, { success: false, limit: 0, remaining: 0, reset: 0, reason: "denyList", deniedValue });
      assert.equal((await ratelimit.getRemaining(identifier)).remaining, 4, `${identifier}: nothing counted`);
      counter.requests = 0;
      const again = decided(await ratelimit.limit(identifier, options));
      assert.deepEqual(again, denied, "remembered");
      assert.equal(counter.requests, 0, `${identifier}: answered from the cache of denied values`);
    }
    counter.requests = 0;
    const clean = decided(await ratelimit.limit("u-clean", { ip: "198.51.100.2", userAgent: "curl", country: "DE" }));
    assert.deepEqual([clean.success, clean.remaining, clean.reason, clean.deniedValue], [true, 3, undefined, undefined]);
    assert.equal(counter.requests, 1);
  });
}

test("@upstash/ratelimit with enableProtection and edgelimit deny the same values; only the peer counts them", { skip }, async () => {
  const prefix = `${run}:fleet`;
  const make = (R, Redis) =>
    new R.Ratelimit({
      redis: new Redis({ url, token }),
      limiter: R.Ratelimit.fixedWindow(4, "1 h"),
      prefix,
      enableProtection: true,
      ephemeralCache: false,
    });
  const ours = make({ Ratelimit }, Redis);
  const peer = make(peerRatelimit, peerRedis.Redis);
  // The peer downloads the IP list from GitHub when its status is unset; disabled, it does not.
  await ours.disableIpDenyList();
  const bad = { id: `${prefix}-id`, ip: "203.0.113.77", userAgent: `${prefix}-agent`, country: "YY" };
  await redis.sadd(`${prefix}:denyList:all`, ...Object.values(bad));
  for (const [suffix, options, value] of [
    ["id", undefined, bad.id],
    ["ip", { ip: bad.ip }, bad.ip],
    ["agent", { userAgent: bad.userAgent }, bad.userAgent],
    ["country", { country: bad.country }, bad.country],
  ]) {
    const identifier = suffix === "id" ? bad.id : `${prefix}-${suffix}`;
    const [fromPeer, fromUs] = [await peer.limit(identifier, options), await ours.limit(identifier, options)];
    await fromPeer.pending;
    for (const answer of [fromPeer, fromUs]) {
      assert.deepEqual([answer.success, answer.remaining, answer.reason, answer.deniedValue], [false, 0, "denyList", value]);
    }
    // The known difference: the peer decides the limit beside the deny list, so its first denial
    // reports (and consumes) the limit; edgelimit answers as the peer does for the values it remembers.
    assert.deepEqual([fromUs.limit, fromUs.reset], [0, 0]);
    assert.deepEqual([fromPeer.limit, fromPeer.reset > Date.now()], [4, true]);
  }
  const [peerOnly, oursOnly] = [`${prefix}-peer-only`, `${prefix}-ours-only`];
  await redis.sadd(`${prefix}:denyList:all`, peerOnly, oursOnly);
  await (await peer.limit(peerOnly)).pending;
  await ours.limit(oursOnly);
  assert.equal((await ours.getRemaining(peerOnly)).remaining, 3, "the peer counted its denial");
  assert.equal((await ours.getRemaining(oursOnly)).remaining, 4, "edgelimit counted nothing");
  // Values not in the list: both admit, on one shared limit.
  const shared = `${prefix}-shared`;
  const answers = [];
  for (let i = 0; i < 5; i++) {
    const answer = await [peer, ours][i % 2].limit(shared, { ip: "198.51.100.3" });
    await answer.pending;
    answers.push(answer.success);
  }
  assert.deepEqual(answers, [true, true, true, true, false]);
});

/** Serves `body` at any path on a loopback port while `work` runs; `work` gets the base URL. */
async function serving(status, body, work) {
  const server = createServer((request, response) => {
    response.writeHead(status, { "content-type": "text/plain" });
    response.end(body);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    return await work(`http://127.0.0.1:${server.address().port}`);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

test("an IP deny list written by edgelimit is honoured by @upstash/ratelimit, with the peer's keys", { skip }, async () => {
  const prefix = `${run}:ips-ours`;
  const counter = countingFetch();
  const ours = new Ratelimit({
    redis: new Redis({ url, token, fetch: counter.fetch }),
    limiter: Ratelimit.fixedWindow(10, "1 h"),
    prefix,
    enableProtection: true,
  });
  const peer = new peerRatelimit.Ratelimit({
    redis,
    limiter: peerRatelimit.Ratelimit.fixedWindow(10, "1 h"),
    prefix,
    enableProtection: true,
  });
  await redis.sadd(`${prefix}:denyList:all`, "203.0.113.99"); // what the console denies stays
  // As an array of `ipsum` lines (IP, then how many lists name it), the default threshold 6.
  const count = await ours.updateIpDenyList(["# ipsum", "203.0.113.1\t7", "203.0.113.2\t2", "203.0.113.3"]);
  assert.equal(count, 2);
  assert.deepEqual((await redis.smembers(`${prefix}:denyList:ipDenyList`)).sort(), ["203.0.113.1", "203.0.113.3"]);
  assert.deepEqual(
    (await redis.smembers(`${prefix}:denyList:all`)).sort(),
    ["203.0.113.1", "203.0.113.3", "203.0.113.99"],
  );
  assert.equal(await redis.get(`${prefix}:ipDenyListStatus`), "valid");
  const ttl = await redis.pttl(`${prefix}:ipDenyListStatus`);
  assert.ok(ttl > 0 && ttl <= 24 * 3600 * 1000, `valid until the next 2 AM UTC: ${ttl} ms`);

  const denied = await peer.limit("p1", { ip: "203.0.113.1" });
  await denied.pending; // the status is set: the peer downloads nothing
  assert.deepEqual([denied.success, denied.reason, denied.deniedValue], [false, "denyList", "203.0.113.1"]);
  const admitted = await peer.limit("p2", { ip: "203.0.113.2" });
  await admitted.pending;
  assert.equal(admitted.success, true, "scored 2, under the threshold");

  // From a URL, fetched with the `fetch` of the Redis settings; a `URL` object too; ttl in ms.
  await serving(200, "198.51.100.201 8\n198.51.100.202 1\n", async (base) => {
    counter.urls.length = 0;
    assert.equal(await ours.updateIpDenyList(`${base}/ipsum.txt`, { ttl: 60_000 }), 1);
    assert.ok(counter.urls.includes(`${base}/ipsum.txt`), "fetched with the configured fetch");
    const shortTtl = await redis.pttl(`${prefix}:ipDenyListStatus`);
    assert.ok(shortTtl > 0 && shortTtl <= 60_000, `ttl: ${shortTtl} ms`);
    assert.equal(await ours.updateIpDenyList(new URL(`${base}/ipsum.txt`)), 1);
  });
  const fromUrl = await peer.limit("p3", { ip: "198.51.100.201" });
  await fromUrl.pending;
  assert.deepEqual([fromUrl.success, fromUrl.deniedValue], [false, "198.51.100.201"]);
  assert.deepEqual(
    (await redis.smembers(`${prefix}:denyList:all`)).sort(),
    ["198.51.100.201", "203.0.113.99"],
    "the new list replaced the old one",
  );
  const lenient = new Ratelimit({ redis: new Redis({ url, token }), limiter: Ratelimit.fixedWindow(1, "1 h"), prefix, denyListThreshold: 1 });
  assert.equal(await lenient.updateIpDenyList(["198.51.100.201 8", "198.51.100.202 1"]), 2, "denyListThreshold 1 keeps both");

  assert.equal(await lenient.updateIpDenyList(["# an empty list"]), 0);
  assert.deepEqual(await redis.smembers(`${prefix}:denyList:all`), ["203.0.113.99"]);
  await ours.disableIpDenyList();
  assert.equal(await redis.get(`${prefix}:ipDenyListStatus`), "disabled");
  assert.equal(await redis.pttl(`${prefix}:ipDenyListStatus`), -1);
  assert.deepEqual(await redis.smembers(`${prefix}:denyList:all`), ["203.0.113.99"]);
  const afterDisable = await peer.limit("p4", { ip: "198.51.100.202" });
  await afterDisable.pending;
  assert.equal(afterDisable.success, true);
});

test("an IP deny list written by @upstash/ratelimit is honoured by edgelimit", { skip }, async () => {
  const prefix = `${run}:ips-peer`;
  // The peer fetches its list from GitHub, which tests cannot reach: its `fetch` of that URL is
  // answered locally with an `ipsum` level file; every other request goes through.
  const realFetch = globalThis.fetch;
  globalThis.fetch = (target, init) =>
    String(target).startsWith("https://raw.githubusercontent.com/stamparm/ipsum/")
      ? Promise.resolve(new Response("192.0.2.10\n192.0.2.11\n"))
      : realFetch(target, init);
  try {
    await peerRatelimit.IpDenyList.updateIpDenyList(redis, prefix, 6);
  } finally {
    globalThis.fetch = realFetch;
  }
  const make = () =>
    new Ratelimit({ redis: new Redis({ url, token }), limiter: Ratelimit.slidingWindow(10, "1 h"), prefix, enableProtection: true });
  const ours = make();
  const denied = decided(await ours.limit("u", { ip: "192.0.2.11" }));
  assert.deepEqual([denied.success, denied.reason, denied.deniedValue], [false, "denyList", "192.0.2.11"]);
  await peerRatelimit.IpDenyList.disableIpDenyList(redis, prefix);
  const fresh = make(); // another instance, which has not remembered the value
  assert.equal((await fresh.limit("u", { ip: "192.0.2.11" })).success, true);
});

test("every bad protection option or argument throws the right error, and the instance keeps working", { skip }, async () => {
  const base = { redis: new Redis({ url, token }), limiter: Ratelimit.fixedWindow(5, "1 h"), prefix: `${run}:bad` };
  const throwsOn = (options, kind, pattern) =>
    assert.throws(() => new Ratelimit({ ...base, ...options }), (error) => error instanceof kind && pattern.test(error.message));
  throwsOn({ enableProtection: "yes" }, TypeError, /`enableProtection` must be a boolean, got "yes"/);
  throwsOn({ analytics: 1 }, TypeError, /`analytics` must be a boolean, got 1/);
  throwsOn({ denyListThreshold: 0 }, RangeError, /`denyListThreshold` must be a number from 1 to 8, got 0/);
  throwsOn({ denyListThreshold: 8.5 }, RangeError, /`denyListThreshold` .* got 8.5/);
  throwsOn({ denyListThreshold: "6" }, TypeError, /`denyListThreshold` must be a number, got "6"/);
  throwsOn({ redis: undefined, enableProtection: true }, TypeError, /`enableProtection` needs `redis`/);
  throwsOn({ redis: undefined, analytics: true }, TypeError, /`analytics` needs `redis`/);
  throwsOn(
    { limiter: Ratelimit.cachedFixedWindow(5, "1 h"), enableProtection: true },
    TypeError,
    /`enableProtection` cannot go with Ratelimit.cachedFixedWindow/,
  );

  const ratelimit = new Ratelimit({ ...base, enableProtection: true, analytics: true });
  const rejects = (promise, kind, pattern) =>
    assert.rejects(promise, (error) => error instanceof kind && pattern.test(error.message));
  await rejects(ratelimit.limit("u", { ip: 5 }), TypeError, /Ratelimit.limit: `ip` must be a string, got 5/);
  await rejects(ratelimit.limit("u", { userAgent: {} }), TypeError, /`userAgent` must be a string, got an object/);
  await rejects(ratelimit.limit("u", { country: true }), TypeError, /`country` must be a string, got true/);
  await rejects(ratelimit.limit("u", { geo: { city: 1n } }), TypeError, /`geo` must be JSON-serialisable/);
  await rejects(ratelimit.limit(null, { ip: "1.1.1.1" }), TypeError, /`identifier` must be a string or a number, got null/);
  await rejects(ratelimit.limit("u", { rate: NaN }), RangeError, /`rate`/);
  await rejects(ratelimit.updateIpDenyList(5), TypeError, /`list` must be an array of lines or a URL, got 5/);
  await rejects(ratelimit.updateIpDenyList(["1.1.1.1", 2]), TypeError, /`list\[1\]` must be a string, got number/);
  await rejects(
    ratelimit.updateIpDenyList(["1.1.1.1 5", "1.1.1.1 lots"]),
    RangeError,
    /`list` line 2 must be an IP, optionally followed by its score, got "1.1.1.1 lots"/,
  );
  await rejects(ratelimit.updateIpDenyList(["1.1.1.1 5 6"]), RangeError, /`list` line 1/);
  const inMemory = new Ratelimit({ limiter: Ratelimit.fixedWindow(5, "1 h") });
  await rejects(inMemory.updateIpDenyList([]), TypeError, /`redis` must be given to `new Ratelimit`/);
  await rejects(inMemory.disableIpDenyList(), TypeError, /`redis` must be given/);
  await rejects(ratelimit.updateIpDenyList([], { ttl: 0 }), RangeError, /`ttl` must be a whole number from 1/);
  await rejects(ratelimit.updateIpDenyList([], 5), TypeError, /`options` must be an object, got 5/);
  await serving(404, "not found", (address) => rejects(ratelimit.updateIpDenyList(address), Error, /answered HTTP 404/));
  const ok = await ratelimit.limit("u", { ip: "198.51.100.9", userAgent: "", country: null });
  assert.deepEqual([ok.success, ok.remaining], [true, 4], "the instance keeps working");
});
