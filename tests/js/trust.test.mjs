// A limiter no request can switch off (README, "When things fail"), tried as an attacker and as a careless
// user would, against the built package (pkg/) and the real gateway and redis-server:
// - an identifier chosen to collide with a key every identifier shares is refused, and the victims stay
//   limited (the peer, given the same identifier, overwrites the shared key);
// - the fail mode answers outages only: any other HTTP status or Redis error rejects in both modes;
// - identifiers too long or not well-formed throw, and random identifiers of every kind settle without
//   trapping the instance (FUZZ_SEED and FUZZ_ITERATIONS for longer runs).
//
//   bash scripts/with_gateway.sh node --test tests/js/trust.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import * as peerRatelimit from "@upstash/ratelimit";
import * as peerRedis from "@upstash/redis";
import { Ratelimit, Redis } from "./edgelimit.mjs";

const url = process.env.EDGELIMIT_TEST_URL;
const token = process.env.EDGELIMIT_TEST_TOKEN;
const skip = !url && "EDGELIMIT_TEST_URL is not set (run under scripts/with_gateway.sh)";
const raw = url && new peerRedis.Redis({ url, token, enableTelemetry: false, automaticDeserialization: false });

/** A fresh prefix per test, so tests never share keys. */
const prefix = (name) => `trust-${name}-${Date.now()}-${Math.random().toString(36).slice(2)}`;

/** The hour bucket of the analytics events now, as the peer names it. */
const hour = () => Math.floor(Date.now() / 3_600_000) * 3_600_000;

/** Checks that `error` is a `kind` whose message includes (or matches) every one of `parts`. */
const rejection = (kind, ...parts) => (error) => {
  assert.ok(error instanceof kind, `expected ${kind.name}, got ${error?.constructor?.name}: ${error?.message}`);
  for (const part of parts) {
    const found = part instanceof RegExp ? part.test(error.message) : error.message.includes(part);
    assert.ok(found, `"${error.message}" includes ${part}`);
  }
  return true;
};

/** Admitted of `calls` calls for `identifier`, in order. */
async function admitted(ratelimit, identifier, calls) {
  let count = 0;
  for (let call = 0; call < calls; call++) {
    const answer = await ratelimit.limit(identifier);
    assert.equal(answer.reason, undefined, `${identifier}: decided by the algorithm`);
    if (answer.success) count++;
  }
  return count;
}

const attacks = [
  ["dynamicLimits", { dynamicLimits: true }, () => "dynamic:global"],
  ["enableProtection", { enableProtection: true }, () => "denyList:all"],
  ["analytics", { analytics: true }, () => `events:${hour()}`],
];

for (const [feature, options, attackerId] of attacks) {
  test(`with ${feature}, an identifier naming the shared key is refused and 100 victims stay limited, in both fail modes`, { skip }, async () => {
    for (const failMode of ["open", "closed"]) {
      const p = prefix(feature);
      const ratelimit = new Ratelimit({
        redis: new Redis({ url, token }),
        limiter: Ratelimit.tokenBucket(1, "1 h", 3),
        prefix: p,
        ephemeralCache: false,
        failMode,
        ...options,
      });
      const attacker = attackerId();
      await assert.rejects(ratelimit.limit(attacker), rejection(TypeError, "identifier", feature === "enableProtection" ? "protection" : feature === "dynamicLimits" ? "dynamic limits" : "analytics"));
      await assert.rejects(ratelimit.getRemaining(attacker), TypeError);
      await assert.rejects(ratelimit.resetUsedTokens(attacker), TypeError);
      await assert.rejects(ratelimit.blockUntilReady(attacker, 10), TypeError);
      // Nothing was written under the shared key.
      assert.equal(await raw.exists(`${p}:${attacker}`), 0);
      // Each victim admitted exactly the limit, decided by the algorithm.
      const victims = Array.from({ length: 100 }, (_, index) => `victim-${index}`);
      const counts = await Promise.all(victims.map((victim) => admitted(ratelimit, victim, 5)));
      assert.deepEqual(counts, victims.map(() => 3), failMode);
    }
  });
}

test("the peer, given the same identifier, overwrites the shared key: what the refusal prevents", { skip }, async () => {
  const p = prefix("peer");
  const peer = new peerRatelimit.Ratelimit({
    redis: new peerRedis.Redis({ url, token, enableTelemetry: false }),
    limiter: peerRatelimit.Ratelimit.tokenBucket(1, "1 h", 3),
    prefix: p,
    ephemeralCache: false,
    analytics: false,
  });
  await peer.limit("dynamic:global");
  assert.equal(await raw.type(`${p}:dynamic:global`), "hash");
  // A fleet sharing the prefix with dynamic limits now meets a key of another type: an error naming it
  // in both fail modes, never a silent admission.
  for (const failMode of ["open", "closed"]) {
    const ratelimit = new Ratelimit({
      redis: new Redis({ url, token }),
      limiter: Ratelimit.tokenBucket(1, "1 h", 3),
      prefix: p,
      dynamicLimits: true,
      failMode,
    });
    await assert.rejects(ratelimit.limit("victim"), rejection(Error, /WRONGTYPE|corrupt state/));
  }
});

/** A `fetch` answering every request with `status` and the JSON `body`, without a server. */
const answering = (status, body) => async () =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

test("the fail mode answers outages only: 5xx, 429, Redis's outage replies, no reply", async () => {
  const outages = [
    ["503", answering(503, { error: "Service Unavailable" })],
    ["500", answering(500, { error: "ERR internal" })],
    ["429", answering(429, { error: "ERR max daily request limit exceeded" })],
    ["LOADING", answering(200, [{ error: "LOADING Redis is loading the dataset in memory" }])],
    ["BUSY", answering(200, [{ error: "BUSY Redis is busy running a script" }])],
    ["OOM", answering(200, [{ error: "OOM command not allowed when used memory > 'maxmemory'." }])],
    ["READONLY", answering(200, [{ error: "READONLY You can't write against a read only replica." }])],
    ["MASTERDOWN", answering(200, [{ error: "MASTERDOWN Link with MASTER is down" }])],
    ["CLUSTERDOWN", answering(200, [{ error: "CLUSTERDOWN The cluster is down" }])],
    ["TRYAGAIN", answering(200, [{ error: "TRYAGAIN Multiple keys request during rehashing of slot" }])],
    ["fetch throws", async () => { throw new TypeError("fetch failed"); }],
  ];
  for (const [name, fetch] of outages) {
    for (const failMode of ["open", "closed"]) {
      const ratelimit = new Ratelimit({
        redis: new Redis({ url: "http://127.0.0.1:9", token: "t", fetch }),
        limiter: Ratelimit.slidingWindow(3, "1 m"),
        failMode,
      });
      const answer = await ratelimit.limit("u");
      assert.deepEqual([answer.success, answer.reason], [failMode === "open", "error"], `${name}, ${failMode}`);
      await answer.pending;
    }
  }
});

test("anything else rejects naming its cause, in both fail modes: 4xx, Redis errors, malformed replies", async () => {
  const errors = [
    ["HTTP 401", answering(401, { error: "WRONGPASS invalid or missing auth token" }), "401"],
    ["HTTP 403", answering(403, { error: "NOPERM this user has no permissions" }), "403"],
    ["HTTP 413", answering(413, { error: "ERR body too large" }), "413"],
    ["HTTP 400", answering(400, { error: "ERR bad request" }), "400"],
    ["WRONGTYPE", answering(200, [{ error: "WRONGTYPE Operation against a key holding the wrong kind of value" }]), "WRONGTYPE"],
    ["ERR", answering(200, [{ error: "ERR value is not an integer or out of range" }]), "ERR value"],
    ["malformed", answering(200, { result: "not a pipeline" }), "malformed"],
  ];
  for (const [name, fetch, cause] of errors) {
    for (const failMode of ["open", "closed"]) {
      for (const limiter of [Ratelimit.slidingWindow(3, "1 m"), Ratelimit.tokenBucket(1, "1 m", 3)]) {
        const ratelimit = new Ratelimit({ redis: new Redis({ url: "http://127.0.0.1:9", token: "t", fetch }), limiter, failMode });
        await assert.rejects(ratelimit.limit("u"), rejection(Error, cause), `${name}, ${failMode}`);
        await assert.rejects(ratelimit.blockUntilReady("u", 1000), rejection(Error, cause), `${name}, ${failMode}`);
      }
    }
  }
});

// Issue 40: only outages fail open. A custom `fetch` that breaks its contract (throws instead of returning
// a Promise, resolves to something that is not a Response, hands back a body already read) is a
// programming error, rejected in both fail modes naming the custom `fetch`, while Redis is healthy; a
// `fetch` that rejects, as the platform's does on a network failure, is still an outage.
const closedUrl = process.env.EDGELIMIT_TEST_CLOSED_URL;

test("a custom fetch that breaks its contract rejects naming it, in both fail modes", { skip }, async () => {
  const broken = [
    ["reads the body before handing back the Response", async (target, init) => {
      const response = await fetch(target, init);
      await response.text();
      return response;
    }],
    ["resolves to the parsed JSON", async (target, init) => (await fetch(target, init)).json()],
    ["resolves to nothing", async (target, init) => { await fetch(target, init); }],
    ["throws a TypeError instead of returning a Promise", () => { throw new TypeError("log is not a function"); }],
  ];
  for (const [name, brokenFetch] of broken) {
    for (const failMode of ["open", "closed"]) {
      const ratelimit = new Ratelimit({
        redis: new Redis({ url, token, fetch: brokenFetch }),
        limiter: Ratelimit.fixedWindow(50, "1 m"),
        prefix: prefix("fetch"),
        failMode,
      });
      await assert.rejects(ratelimit.limit("u"), rejection(TypeError, "custom `fetch`"), `${name}, ${failMode}`);
      await assert.rejects(ratelimit.getRemaining("u"), rejection(TypeError, "custom `fetch`"), `${name}, ${failMode}`);
    }
  }
});

test("a fetch that rejects, the platform's own on a port nobody listens on too, is an outage", { skip: (!closedUrl && "EDGELIMIT_TEST_CLOSED_URL is not set") || skip }, async () => {
  const fetches = [
    ["the global fetch", undefined],
    ["a custom fetch delegating to it", (target, init) => fetch(target, init)],
    ["a custom async fetch that throws", async () => { throw new TypeError("fetch failed"); }],
  ];
  for (const [name, fetch] of fetches) {
    for (const failMode of ["open", "closed"]) {
      const ratelimit = new Ratelimit({
        redis: new Redis({ url: closedUrl, token: "t", fetch }),
        limiter: Ratelimit.fixedWindow(50, "1 m"),
        failMode,
      });
      const answer = await ratelimit.limit("u");
      assert.deepEqual([answer.success, answer.reason], [failMode === "open", "error"], `${name}, ${failMode}`);
    }
  }
});

test("a wrong token rejects in both fail modes, against the real gateway", { skip }, async () => {
  for (const failMode of ["open", "closed"]) {
    const ratelimit = new Ratelimit({ redis: new Redis({ url, token: "wrong" }), limiter: Ratelimit.gcra(1, "1 s"), failMode });
    await assert.rejects(ratelimit.limit("u"), rejection(Error, "401"));
  }
});

test("identifiers are bounded in bytes and well-formed: a RangeError or TypeError naming the identifier, and the instance keeps working", async () => {
  const ratelimit = new Ratelimit({ limiter: Ratelimit.fixedWindow(2, "1 m") });
  const max = "é".repeat(4096); // 8,192 bytes of UTF-8
  assert.equal((await ratelimit.limit(max)).success, true);
  for (const long of [max + "x", "x".repeat(1 << 20)]) {
    await assert.rejects(ratelimit.limit(long), rejection(RangeError, "identifier", "8192"));
    await assert.rejects(ratelimit.getRemaining(long), RangeError);
  }
  for (const illFormed of ["\uD800", "a\uDC00", "\uDBFF\uDBFF\uDC00x", "\uDFFF\uD800"]) {
    await assert.rejects(ratelimit.limit(illFormed), rejection(TypeError, "identifier", "well-formed"));
    await assert.rejects(ratelimit.resetUsedTokens(illFormed), TypeError);
  }
  // U+FFFD itself, and pairs, are identifiers like any other: one counter each.
  for (const identifier of ["\uFFFD", "\uD83D\uDE00", "a\uFFFDb"]) {
    assert.equal((await ratelimit.limit(identifier)).remaining, 1, identifier);
  }
  assert.equal((await ratelimit.limit("\uFFFD")).remaining, 0);
});

test("the request values of protection are bounded like identifiers", { skip }, async () => {
  const ratelimit = new Ratelimit({
    redis: new Redis({ url, token }),
    limiter: Ratelimit.slidingWindow(3, "1 m"),
    prefix: prefix("values"),
    enableProtection: true,
    analytics: true,
  });
  for (const field of ["ip", "userAgent", "country"]) {
    await assert.rejects(ratelimit.limit("u", { [field]: "x".repeat(8193) }), rejection(RangeError, field, "8192"));
  }
  // Everything at its bound, in the JSON escaping that grows most, fits one request.
  const worst = "\u0001".repeat(8192);
  const answer = await ratelimit.limit(worst, { ip: worst, userAgent: worst, country: worst });
  assert.equal(answer.reason, undefined);
  assert.equal(answer.success, true);
  await answer.pending;
});

/** A small seeded generator (mulberry32), so a failing run can be replayed with its FUZZ_SEED. */
function random(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A random identifier of one of the kinds an attacker or a careless user sends. */
function identifierOf(next) {
  const pick = (items) => items[Math.floor(next() * items.length)];
  const chars = (count, from, span) =>
    String.fromCharCode(...Array.from({ length: count }, () => from + Math.floor(next() * span)));
  switch (Math.floor(next() * 8)) {
    case 0: return chars(1 + Math.floor(next() * 40), 0x20, 0x5f); // printable ASCII
    case 1: return chars(1 + Math.floor(next() * 40), 0, 0x20); // control characters
    case 2: return chars(1 + Math.floor(next() * 20), 0xd800, 0x800); // surrogates, mostly lone
    case 3: return chars(1 + Math.floor(next() * 20), 0x80, 0xd000); // BMP text
    case 4: return pick(["dynamic", "dynamic:global", "denyList:all", "denyList", "ipDenyListStatus", `events:${hour()}`, "events"]) + pick(["", ":x", "x"]);
    case 5: return "x".repeat(8000 + Math.floor(next() * 400)); // around the bound
    case 6: return pick(["", "{", "}", "{}", "}{", ":", "::", "*", "a:*"]);
    default: return Math.floor(next() * 1e6) * (next() < 0.5 ? 1 : -1); // a number
  }
}

test("random identifiers settle, throw only TypeError or RangeError, and never stop the instance (FUZZ_SEED)", { skip }, async () => {
  const seed = Number(process.env.FUZZ_SEED ?? 20261204);
  const iterations = Number(process.env.FUZZ_ITERATIONS ?? 300);
  const next = random(seed);
  const p = prefix("fuzz");
  const limits = [
    new Ratelimit({ limiter: Ratelimit.tokenBucket(1, "1 m", 3), dynamicLimits: false }),
    new Ratelimit({ redis: new Redis({ url, token }), limiter: Ratelimit.tokenBucket(1, "1 m", 3), prefix: p, dynamicLimits: true, enableProtection: true, analytics: true }),
    new Ratelimit({ redis: new Redis({ url, token }), limiter: Ratelimit.slidingWindow(3, "1 m"), prefix: `${p}-c`, keys: "cluster", dynamicLimits: true }),
    new Ratelimit({ redis: new Redis({ url, token }), limiter: Ratelimit.gcra(3, "1 m"), prefix: `${p}-g` }),
  ];
  const liveness = (promise, what) => {
    let timer;
    const stuck = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what} did not settle in 60 s (seed ${seed})`)), 60_000); });
    return Promise.race([promise, stuck]).finally(() => clearTimeout(timer));
  };
  const outcomes = { answered: 0, TypeError: 0, RangeError: 0 };
  for (let iteration = 0; iteration < iterations; iteration++) {
    const identifier = identifierOf(next);
    const ratelimit = limits[Math.floor(next() * limits.length)];
    const what = `seed ${seed}, iteration ${iteration}, identifier ${JSON.stringify(String(identifier).slice(0, 40))}`;
    try {
      const answer = await liveness(ratelimit.limit(identifier), what);
      assert.ok(answer.reason === undefined || answer.reason === "cacheBlock", `${what}: ${answer.reason}`);
      assert.ok(answer.remaining >= 0, what);
      await liveness(answer.pending, what);
      outcomes.answered++;
    } catch (error) {
      assert.ok(error instanceof TypeError || error instanceof RangeError, `${what}: ${error?.stack ?? error}`);
      outcomes[error.constructor.name]++;
    }
  }
  // Every kind was met, and each instance still decides.
  assert.ok(outcomes.answered > 0 && outcomes.TypeError > 0 && outcomes.RangeError > 0, JSON.stringify(outcomes));
  for (const ratelimit of limits) assert.equal((await ratelimit.limit(`after-${seed}`)).success, true);
});

test("stored state the algorithm cannot read rejects naming the key in both fail modes, and is never written back", { skip }, async () => {
  const now = Date.now();
  const cases = [
    ["fixedWindow", Ratelimit.fixedWindow(3, "1 h"), (p) => [`${p}:u:${Math.floor(now / 3_600_000)}`, "nan"]],
    ["slidingWindow", Ratelimit.slidingWindow(3, "1 h"), (p) => [`${p}:u:${Math.floor(now / 3_600_000)}`, "-inf"]],
    ["fixedWindow", Ratelimit.fixedWindow(3, "1 h"), (p) => [`${p}:u:${Math.floor(now / 3_600_000)}`, "9223372036854775808"]],
  ];
  for (const [name, limiter, state] of cases) {
    for (const failMode of ["open", "closed"]) {
      const p = prefix(`corrupt-${name}`);
      const [key, value] = state(p);
      await raw.set(key, value);
      const ratelimit = new Ratelimit({ redis: new Redis({ url, token }), limiter, prefix: p, failMode });
      await assert.rejects(ratelimit.limit("u"), rejection(Error, "corrupt state", key), `${name} ${value} ${failMode}`);
      await assert.rejects(ratelimit.getRemaining("u"), rejection(Error, "corrupt state"));
      assert.equal(await raw.get(key), value, "never written back");
      await ratelimit.resetUsedTokens("u");
      assert.equal((await ratelimit.limit("u")).success, true, "repaired by resetUsedTokens");
    }
  }
});

test("a token bucket deep in debt (older peers wrote negative tokens) settles denied with nothing left, and blockUntilReady returns", { skip }, async () => {
  const p = prefix("debt");
  await raw.hset(`${p}:u`, { refilledAt: Date.now(), tokens: "-1e21" });
  const ratelimit = new Ratelimit({ redis: new Redis({ url, token }), limiter: Ratelimit.tokenBucket(1, "1 s", 3), prefix: p, ephemeralCache: false });
  const answer = await ratelimit.limit("u");
  assert.deepEqual([answer.success, answer.remaining, answer.reason], [false, 0, undefined]);
  const blocked = await ratelimit.blockUntilReady("u", 5_000);
  assert.deepEqual([blocked.success, blocked.remaining], [false, 0]);
  assert.equal((await ratelimit.getRemaining("u")).remaining, 0);
});

test("an analytics key left as a hash by @upstash/ratelimit before 1.1.2 leaves every decision to the limit and warns", { skip }, async () => {
  const p = prefix("events");
  await raw.hset(`${p}:events:${hour()}`, { old: "layout" });
  const warnings = [];
  const warn = console.warn;
  console.warn = (message) => warnings.push(String(message));
  try {
    for (const failMode of ["open", "closed"]) {
      const ratelimit = new Ratelimit({ redis: new Redis({ url, token }), limiter: Ratelimit.fixedWindow(2, "1 h"), prefix: `${p}`, analytics: true, ephemeralCache: false, failMode });
      const answers = [];
      for (let call = 0; call < 3; call++) {
        const answer = await ratelimit.limit(`u-${failMode}`);
        await answer.pending;
        answers.push([answer.success, answer.reason]);
      }
      assert.deepEqual(answers, [[true, undefined], [true, undefined], [false, undefined]], failMode);
    }
  } finally {
    console.warn = warn;
  }
  assert.ok(warnings.length >= 6 && warnings.every((warning) => /analytics event was not recorded/.test(warning)), JSON.stringify(warnings.slice(0, 2)));
});
