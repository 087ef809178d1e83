// The built npm package (pkg/, from `bash scripts/build_pkg.sh`), imported through its package.json
// `exports` under the `node` condition, against a real gateway:
//
//   bash scripts/with_gateway.sh node --test tests/js/
//
// Gateway tests are skipped when EDGELIMIT_TEST_URL is not set.
import { test } from "node:test";
import assert from "node:assert/strict";
import { MultiRegionRatelimit, Ratelimit, Redis } from "./edgelimit.mjs";
import { countingFetch } from "./counting_fetch.mjs";

const URL_ = process.env.EDGELIMIT_TEST_URL;
const TOKEN = process.env.EDGELIMIT_TEST_TOKEN;
const CLOSED_URL = process.env.EDGELIMIT_TEST_CLOSED_URL;
const noGateway = !URL_ && "EDGELIMIT_TEST_URL is not set (run under scripts/with_gateway.sh)";

/** A fresh prefix per test, so tests never share keys. */
const prefix = () => `edgelimit-js-${Date.now()}-${Math.random().toString(36).slice(2)}`;

async function assertPending(response) {
  assert.ok(response.pending instanceof Promise, "pending is a real Promise");
  await response.pending;
}

test("the package resolves to the node entry through its exports", () => {
  const resolved = import.meta.resolve("edgelimit");
  assert.match(resolved, /\/index\.node\.js$/);
  assert.equal(typeof Ratelimit, "function");
  assert.equal(typeof Redis, "function");
});

const algorithms = {
  fixedWindow: () => Ratelimit.fixedWindow(3, "1 d"),
  slidingWindow: () => Ratelimit.slidingWindow(3, "10 s"),
  tokenBucket: () => Ratelimit.tokenBucket(1, "1 h", 3),
  gcra: () => Ratelimit.gcra(3, "1 h"),
};

for (const [name, limiter] of Object.entries(algorithms)) {
  test(`${name} admits up to its limit in Redis, then denies`, { skip: noGateway }, async () => {
    const redis = new Redis({ url: URL_, token: TOKEN });
    const ratelimit = new Ratelimit({ redis, limiter: limiter(), prefix: prefix(), ephemeralCache: false });
    const before = Date.now();
    for (const remaining of [2, 1, 0]) {
      const response = await ratelimit.limit("user");
      assert.equal(response.success, true, `${name}: ${JSON.stringify(response)}`);
      assert.equal(response.remaining, remaining);
      assert.equal(response.limit, 3);
      assert.equal(response.reason, undefined);
      await assertPending(response);
    }
    const denied = await ratelimit.limit("user");
    assert.equal(denied.success, false);
    assert.equal(denied.remaining, 0);
    assert.ok(denied.reset > before, `reset ${denied.reset} is in the future`);
    await assertPending(denied);
    assert.equal((await ratelimit.limit("someone else")).success, true);
    assert.deepEqual(Object.keys(await ratelimit.getRemaining("user")).sort(), ["limit", "remaining", "reset"]);
  });
}

test("a negative rate refunds; getRemaining peeks; resetUsedTokens forgets", { skip: noGateway }, async () => {
  const ratelimit = new Ratelimit({
    redis: new Redis({ url: URL_, token: TOKEN }),
    limiter: Ratelimit.fixedWindow(5, "1 d"),
    prefix: prefix(),
  });
  assert.equal((await ratelimit.limit("u", { rate: 4 })).remaining, 1);
  assert.equal((await ratelimit.limit("u", { rate: 2 })).success, false);
  const refunded = await ratelimit.limit("u", { rate: -4 });
  assert.equal(refunded.success, true);
  assert.equal((await ratelimit.limit("u", { rate: 2 })).success, true, "the refund lifted the block");
  const remaining = await ratelimit.getRemaining("u");
  assert.equal(remaining.limit, 5);
  assert.equal(typeof remaining.reset, "number");
  assert.equal((await ratelimit.getRemaining("u")).remaining, remaining.remaining, "peeking takes nothing");
  await ratelimit.resetUsedTokens("u");
  assert.equal((await ratelimit.getRemaining("u")).remaining, 5);
});

test("Redis.fromEnv reads the given object, then process.env", { skip: noGateway }, async () => {
  const env = { UPSTASH_REDIS_REST_URL: URL_, UPSTASH_REDIS_REST_TOKEN: TOKEN };
  const fromObject = Redis.fromEnv(env);
  assert.equal(fromObject.url, URL_);
  const ratelimit = new Ratelimit({ redis: fromObject, limiter: Ratelimit.gcra(1, "1 h"), prefix: prefix() });
  assert.equal((await ratelimit.limit("u")).success, true);

  const saved = { ...process.env };
  try {
    Object.assign(process.env, env);
    assert.equal(Redis.fromEnv().token, TOKEN);
  } finally {
    delete process.env.UPSTASH_REDIS_REST_URL;
    delete process.env.UPSTASH_REDIS_REST_TOKEN;
    Object.assign(process.env, saved);
  }
});

test("Redis.fromEnv with the environment unset builds: a warning, then every request rejects naming the variable", async () => {
  const saved = { ...process.env };
  const warn = console.warn;
  const warnings = [];
  try {
    for (const name of ["UPSTASH_REDIS_REST_URL", "UPSTASH_REDIS_REST_TOKEN", "KV_REST_API_URL", "KV_REST_API_TOKEN"]) delete process.env[name];
    console.warn = (message) => warnings.push(message);
    const redis = Redis.fromEnv();
    assert.match(warnings.join("\n"), /UPSTASH_REDIS_REST_URL.*requests will fail until it is set/);
    assert.equal(redis.url, undefined);
    assert.match(redis.unset, /UPSTASH_REDIS_REST_URL/);
    for (const failMode of ["open", "closed"]) {
      const ratelimit = new Ratelimit({ redis, limiter: Ratelimit.fixedWindow(5, "1 m"), failMode });
      await assert.rejects(ratelimit.limit("u"), (error) => error instanceof TypeError && /UPSTASH_REDIS_REST_URL/.test(error.message), failMode);
      await assert.rejects(ratelimit.getRemaining("u"), TypeError);
      await assert.rejects(ratelimit.resetUsedTokens("u"), TypeError);
      const regions = new MultiRegionRatelimit({ redis: [redis], limiter: MultiRegionRatelimit.fixedWindow(5, "1 m"), failMode });
      await assert.rejects(regions.limit("u"), (error) => error instanceof TypeError && /UPSTASH_REDIS_REST_URL/.test(error.message), failMode);
    }
    process.env.UPSTASH_REDIS_REST_URL = "http://127.0.0.1:9";
    assert.match(Redis.fromEnv().unset, /UPSTASH_REDIS_REST_TOKEN/, "the token is named once the URL is set");
    assert.throws(() => Redis.fromEnv({}), TypeError, "an env object given is checked at once");
  } finally {
    console.warn = warn;
    for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
    Object.assign(process.env, saved);
  }
});

test("without redis, limits live in this instance's memory", async () => {
  const limiter = Ratelimit.slidingWindow(2, "1 h");
  const first = new Ratelimit({ limiter });
  const second = new Ratelimit({ limiter });
  assert.equal((await first.limit("u")).success, true);
  assert.equal((await first.limit("u")).success, true);
  const denied = await first.limit("u");
  assert.equal(denied.success, false);
  await assertPending(denied);
  assert.equal((await second.limit("u")).success, true, "instances do not share memory");
  assert.equal((await first.limit("u", { rate: -1 })).success, true);
  assert.equal((await first.limit("u")).success, true);
});

test("the ephemeral cache answers a blocked identifier without a request", { skip: noGateway }, async () => {
  const counter = countingFetch();
  const redis = new Redis({ url: URL_, token: TOKEN, fetch: counter.fetch });
  const ratelimit = new Ratelimit({ redis, limiter: Ratelimit.fixedWindow(1, "1 d"), prefix: prefix(), ephemeralCache: new Map() });
  assert.equal((await ratelimit.limit("u")).success, true);
  const denied = await ratelimit.limit("u");
  assert.equal(denied.success, false);
  assert.equal(denied.reason, undefined);
  const requests = counter.requests;
  assert.ok(requests >= 2);

  const blocked = await ratelimit.limit("u");
  assert.equal(blocked.success, false);
  assert.equal(blocked.reason, "cacheBlock");
  assert.equal(blocked.reset, denied.reset);
  await assertPending(blocked);
  assert.equal(counter.requests, requests, "no request for a cached block");

  assert.equal((await ratelimit.limit("other")).success, true);
  assert.ok(counter.requests > requests);

  // Without the cache, every call asks Redis.
  const uncached = countingFetch();
  const plain = new Ratelimit({
    redis: new Redis({ url: URL_, token: TOKEN, fetch: uncached.fetch }),
    limiter: Ratelimit.fixedWindow(1, "1 d"),
    prefix: prefix(),
    ephemeralCache: false,
  });
  for (let i = 0; i < 3; i++) await plain.limit("u");
  const afterThree = uncached.requests;
  await plain.limit("u");
  assert.equal(uncached.requests, afterThree + 1);
});

/** A fetch that answers after `ms`, or rejects when aborted. */
const slowFetch = (ms) => (_url, init) =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(() => resolve(new Response(JSON.stringify({ result: null }))), ms);
    init?.signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(init.signal.reason ?? new Error("aborted"));
    });
  });
/** A fetch that never answers and ignores the abort signal. */
const deafFetch = () => new Promise(() => {});

for (const [label, fetch] of [["a slow fetch", slowFetch(2_000)], ["a fetch that ignores abort", deafFetch]]) {
  for (const failMode of ["open", "closed"]) {
    test(`timeout with ${label}, fail ${failMode}`, async () => {
      const ratelimit = new Ratelimit({
        redis: new Redis({ url: "http://127.0.0.1:9", token: "t", fetch }),
        limiter: Ratelimit.fixedWindow(5, "1 m"),
        timeout: 50,
        failMode,
      });
      const started = Date.now();
      const response = await ratelimit.limit("u");
      assert.ok(Date.now() - started < 1_500, "gave up near the timeout");
      assert.equal(response.success, failMode === "open");
      assert.equal(response.reason, "timeout");
      assert.equal(response.limit, 5);
      await assertPending(response);
    });
  }
}

test("after a SCRIPT FLUSH, concurrent calls retry in one request, in their order, the script sent once", { skip: noGateway }, async () => {
  const flush = await fetch(`${URL_}/script/flush`, { headers: { Authorization: `Bearer ${TOKEN}` } });
  assert.equal(flush.status, 200);
  const sent = [];
  const fetchCounting = (url, init) => {
    sent.push(JSON.parse(init.body).map((command) => command[0]));
    return fetch(url, init);
  };
  const ratelimit = new Ratelimit({
    redis: new Redis({ url: URL_, token: TOKEN, fetch: fetchCounting }),
    limiter: Ratelimit.fixedWindow(10, "1 h"),
    prefix: prefix(),
    ephemeralCache: false,
  });
  const answers = await Promise.all(Array.from({ length: 8 }, () => ratelimit.limit("u")));
  assert.deepEqual(answers.map((answer) => answer.remaining), [9, 8, 7, 6, 5, 4, 3, 2]);
  assert.deepEqual(sent, [Array(8).fill("EVALSHA"), ["EVAL", ...Array(7).fill("EVALSHA")]]);
});

test("keepalive requests in flight never pass the 64 KiB of bodies browsers allow them", { skip: noGateway }, async () => {
  // Browsers fail a keepalive fetch past that total, which the fail mode would then answer.
  let inFlight = 0;
  let most = 0;
  let keptAlive = 0;
  const fetch = async (url, init) => {
    const bytes = init.keepalive ? new TextEncoder().encode(init.body).length : 0;
    inFlight += bytes;
    most = Math.max(most, inFlight);
    keptAlive += init.keepalive ? 1 : 0;
    try {
      await new Promise((resolve) => setTimeout(resolve, 30));
      return await globalThis.fetch(url, init);
    } finally {
      inFlight -= bytes;
    }
  };
  const ratelimit = new Ratelimit({
    redis: new Redis({ url: URL_, token: TOKEN, fetch }),
    limiter: Ratelimit.fixedWindow(5, "1 h"),
    prefix: prefix(),
    ephemeralCache: false,
  });
  const answers = [];
  for (let i = 0; i < 40; i++) {
    // One request each (a later tick), 4 KiB of identifier, several in flight at once.
    answers.push(ratelimit.limit(`${i}:${"é".repeat(2_000)}`));
    await new Promise((resolve) => setImmediate(resolve));
  }
  for (const answer of await Promise.all(answers)) {
    assert.equal(answer.success, true);
    assert.equal(answer.reason, undefined);
  }
  assert.ok(most <= 64 * 1024, `${most} bytes of keepalive bodies in flight`);
  assert.ok(keptAlive > 0 && keptAlive < 40, `${keptAlive} of 40 requests kept alive`);
});

for (const failMode of ["open", "closed"]) {
  test(`an unreachable server fails ${failMode}`, { skip: !CLOSED_URL && "EDGELIMIT_TEST_CLOSED_URL is not set" }, async () => {
    const ratelimit = new Ratelimit({
      redis: new Redis({ url: CLOSED_URL, token: "t" }),
      limiter: Ratelimit.tokenBucket(1, "1 s", 5),
      failMode,
    });
    const response = await ratelimit.limit("u");
    assert.equal(response.success, failMode === "open");
    assert.equal(response.reason, "error");
    await assert.rejects(ratelimit.getRemaining("u"), (error) => error instanceof Error && /network|fetch/i.test(error.message));
  });
}

test("a wrong token is an error naming the 401, not an outage for the fail mode", { skip: noGateway }, async () => {
  const ratelimit = new Ratelimit({
    redis: new Redis({ url: URL_, token: "wrong" }),
    limiter: Ratelimit.gcra(1, "1 s"),
    failMode: "open",
  });
  await assert.rejects(ratelimit.limit("u"), (error) => error instanceof Error && /HTTP 401/.test(error.message));
});

/** Checks that `error` is an instance of `kind` whose message names `field`. */
const named = (kind, field) => (error) => {
  assert.ok(error instanceof kind, `expected ${kind.name}, got ${error?.constructor?.name}: ${error?.message}`);
  assert.ok(error.message.includes(field), `"${error.message}" names ${field}`);
  return true;
};

test("bad options throw a TypeError or RangeError naming the field", async () => {
  const limiter = Ratelimit.fixedWindow(3, "10 s");
  const redis = { url: "http://127.0.0.1:9", token: "t" };
  const cases = [
    [() => new Ratelimit(), TypeError, "config"],
    [() => new Ratelimit({}), TypeError, "limiter"],
    [() => new Ratelimit({ limiter: {} }), TypeError, "limiter"],
    [() => new Ratelimit({ limiter: "slidingWindow" }), TypeError, "limiter"],
    [() => new Ratelimit({ limiter, prefix: 5 }), TypeError, "prefix"],
    [() => new Ratelimit({ limiter, ephemeralCache: "yes" }), TypeError, "ephemeralCache"],
    [() => new Ratelimit({ limiter, ephemeralCache: 0 }), RangeError, "ephemeralCache"],
    [() => new Ratelimit({ limiter, ephemeralCache: new Set() }), TypeError, "ephemeralCache"],
    [() => new Ratelimit({ limiter, timeout: -1 }), RangeError, "timeout"],
    [() => new Ratelimit({ limiter, timeout: NaN }), RangeError, "timeout"],
    [() => new Ratelimit({ limiter, timeout: -0.5 }), RangeError, "timeout"],
    [() => new Ratelimit({ limiter, timeout: "5000" }), TypeError, "timeout"],
    [() => new Ratelimit({ limiter, failMode: "sometimes" }), RangeError, "failMode"],
    [() => new Ratelimit({ limiter, failMode: true }), TypeError, "failMode"],
    [() => new Ratelimit({ limiter, redis: "redis://x" }), TypeError, "redis"],
    [() => new Ratelimit({ limiter, redis: {} }), TypeError, "url"],
    [() => new Ratelimit({ limiter, redis: { ...redis, url: "ftp://x" } }), RangeError, "url"],
    [() => new Ratelimit({ limiter, redis: { ...redis, token: 5 } }), TypeError, "token"],
    [() => new Ratelimit({ limiter, redis: { ...redis, fetch: "fetch" } }), TypeError, "fetch"],
    [() => new Redis({ ...redis, fetch: 1 }), TypeError, "fetch"],
    [() => new Redis({ token: "t" }), TypeError, "url"],
    [() => new Redis({ url: "http://x", token: "" }), RangeError, "token"],
    [() => Redis.fromEnv({}), TypeError, "UPSTASH_REDIS_REST_URL"],
    [() => Redis.fromEnv({ UPSTASH_REDIS_REST_URL: "http://x" }), TypeError, "UPSTASH_REDIS_REST_TOKEN"],
    [() => Redis.fromEnv("env"), TypeError, "env"],
    [() => Ratelimit.fixedWindow(0, "1 s"), RangeError, "tokens"],
    [() => Ratelimit.fixedWindow("3", "1 s"), TypeError, "tokens"],
    [() => Ratelimit.fixedWindow(3, "ten"), RangeError, "window"],
    [() => Ratelimit.fixedWindow(3, "10 sec"), RangeError, "window"],
    [() => Ratelimit.fixedWindow(3, -5), RangeError, "window"],
    [() => Ratelimit.fixedWindow(3, {}), TypeError, "window"],
    [() => Ratelimit.slidingWindow(1.5, "1 s"), RangeError, "tokens"],
    [() => Ratelimit.slidingWindow(2 ** 60, "1 s"), RangeError, "tokens"],
    [() => Ratelimit.tokenBucket(1, "1 s", 0), RangeError, "maxTokens"],
    [() => Ratelimit.tokenBucket(NaN, "1 s", 1), RangeError, "refillRate"],
    [() => Ratelimit.tokenBucket(1, undefined, 1), TypeError, "interval"],
    [() => Ratelimit.gcra(1, "1 s", { burst: -1 }), RangeError, "burst"],
    [() => Ratelimit.gcra(1, "0 s"), RangeError, "period"],
    [() => Ratelimit.gcra(1, "1 s", 5), TypeError, "options"],
  ];
  const ratelimit = new Ratelimit({ limiter });
  for (const [index, [make, kind, field]] of cases.entries()) {
    assert.throws(make, named(kind, field), make.toString());
    assert.equal((await ratelimit.limit(`ok-${index}`)).success, true, `still works after ${make}`);
  }
  assert.equal(new Ratelimit({ limiter, ephemeralCache: 5, timeout: 0, failMode: "closed", prefix: "" }) instanceof Ratelimit, true);
});

test("a limiter object is frozen and says its algorithm and parameters; a copy is one, a forged or hostile one throws", async () => {
  const limiter = Ratelimit.tokenBucket(5, "10 s", 20);
  assert.ok(Object.isFrozen(limiter) && Object.isFrozen(limiter.params));
  assert.equal(limiter.algorithm, "tokenBucket");
  assert.deepEqual([...limiter.params], [5, 10_000, 20]);
  assert.deepEqual([...Ratelimit.fixedWindow(3, "1 m").params], [3, 60_000]);
  const copy = new Ratelimit({ limiter: { ...limiter } });
  assert.deepEqual(
    [(await copy.limit("u")).remaining, (await copy.limit("u", { rate: 4 })).remaining],
    [19, 15],
    "a copy of a limiter object decides as its limiter",
  );
  const forged = { ...limiter, params: [5, 10_000, 0] };
  assert.throws(() => new Ratelimit({ limiter: forged }), named(RangeError, "limiter"));
  const hostile = new Proxy({}, { get: () => { throw new Error("a getter that throws"); } });
  assert.throws(() => new Ratelimit({ limiter: hostile }), /a getter that throws/);
  assert.equal((await copy.limit("v")).success, true, "the instance keeps working");
});

test("bad arguments reject with a TypeError or RangeError naming the field; the instance keeps working", async (t) => {
  const instances = { memory: new Ratelimit({ limiter: Ratelimit.fixedWindow(100, "1 h") }) };
  if (URL_) {
    instances.redis = new Ratelimit({
      redis: new Redis({ url: URL_, token: TOKEN }),
      limiter: Ratelimit.fixedWindow(100, "1 h"),
      prefix: prefix(),
    });
  }
  for (const [name, ratelimit] of Object.entries(instances)) {
    await t.test(name, async () => {
      const cases = [
        [() => ratelimit.limit(), TypeError, "identifier"],
        [() => ratelimit.limit(null), TypeError, "identifier"],
        [() => ratelimit.limit(Symbol("u")), TypeError, "identifier"],
        [() => ratelimit.limit({ id: 1 }), TypeError, "identifier"],
        [() => ratelimit.limit("u", 5), TypeError, "options"],
        [() => ratelimit.limit("u", { rate: "1" }), TypeError, "rate"],
        [() => ratelimit.limit("u", { rate: "é".repeat(100) }), TypeError, "rate"],
        [() => ratelimit.limit("u", { rate: NaN }), RangeError, "rate"],
        [() => ratelimit.limit("u", { rate: Infinity }), RangeError, "rate"],
        [() => ratelimit.limit("u", { rate: -Infinity }), RangeError, "rate"],
        [() => ratelimit.limit("u", { rate: 1e300 }), RangeError, "rate"],
        [() => ratelimit.limit("u", { rate: -1e300 }), RangeError, "rate"],
        [() => ratelimit.limit("u", { rate: 1.5 }), RangeError, "rate"],
        [() => ratelimit.getRemaining(null), TypeError, "identifier"],
        [() => ratelimit.getRemaining(undefined), TypeError, "identifier"],
        [() => ratelimit.resetUsedTokens({}), TypeError, "identifier"],
      ];
      for (const [call, kind, field] of cases) {
        await assert.rejects(call, named(kind, field), call.toString());
        const ok = await ratelimit.limit("u");
        assert.equal(ok.success, true, `still works after ${call}`);
      }
      // A rate above the limit is a denial, not an error.
      assert.equal((await ratelimit.limit("u", { rate: 101 })).success, false);
    });
  }
});

test("cachedFixedWindow answers from its count and writes in pending, with the keys and TTL of fixedWindow", { skip: noGateway }, async () => {
  const { Redis: UpstashRedis } = await import("@upstash/redis");
  const upstash = new UpstashRedis({ url: URL_, token: TOKEN, enableTelemetry: false });
  const counter = countingFetch();
  const p = prefix();
  const ratelimit = new Ratelimit({
    redis: new Redis({ url: URL_, token: TOKEN, fetch: counter.fetch }),
    limiter: Ratelimit.cachedFixedWindow(3, "1 h"),
    prefix: p,
  });
  const first = await ratelimit.limit("u");
  assert.deepEqual([first.success, first.remaining, counter.requests], [true, 2, 1]);
  await assertPending(first);

  const answers = [await ratelimit.limit("u"), await ratelimit.limit("u")];
  assert.deepEqual(answers.map((a) => [a.success, a.remaining]), [[true, 1], [true, 0]]);
  await Promise.all(answers.map((a) => a.pending));
  assert.equal(counter.requests, 3, "each admitted request is written, in pending");

  const denied = await ratelimit.limit("u");
  assert.deepEqual([denied.success, denied.remaining], [false, 0]);
  await assertPending(denied);
  assert.equal(counter.requests, 3, "a local denial sends nothing");
  assert.deepEqual(await ratelimit.getRemaining("u"), { remaining: 0, reset: denied.reset, limit: 3 });

  const window = Math.floor(Date.now() / 3_600_000);
  const key = `${p}:u:${window}`;
  assert.equal(Number(await upstash.get(key)), 3);
  const ttl = await upstash.pttl(key);
  assert.ok(ttl > 0 && ttl <= 3_600_000, `the counter expires with its window (PTTL ${ttl})`);
});

test("blockUntilReady waits until the limit admits, or answers at once when waiting cannot help", { skip: noGateway }, async () => {
  const ratelimit = new Ratelimit({
    redis: new Redis({ url: URL_, token: TOKEN }),
    limiter: Ratelimit.gcra(1, "400 ms"),
    prefix: prefix(),
  });
  assert.equal((await ratelimit.limit("u")).success, true);
  const started = Date.now();
  const ready = await ratelimit.blockUntilReady("u", 10_000);
  assert.equal(ready.success, true);
  assert.ok(Date.now() - started >= 300, "not admitted before the limit allows");
  await assertPending(ready);

  const tooShort = await ratelimit.blockUntilReady("u", 50);
  assert.equal(tooShort.success, false);
  await assertPending(tooShort);
});

test("dynamic limits replace the configured limit for every identifier, shared with @upstash/ratelimit's key", { skip: noGateway }, async () => {
  const { Redis: UpstashRedis } = await import("@upstash/redis");
  const upstash = new UpstashRedis({ url: URL_, token: TOKEN, enableTelemetry: false });
  const p = prefix();
  const redis = new Redis({ url: URL_, token: TOKEN });
  const twoPerHour = {
    fixedWindow: Ratelimit.fixedWindow(2, "1 h"),
    slidingWindow: Ratelimit.slidingWindow(2, "1 h"),
    tokenBucket: Ratelimit.tokenBucket(1, "1 h", 2),
    gcra: Ratelimit.gcra(2, "1 h"),
  };
  for (const [name, limiter] of Object.entries(twoPerHour)) {
    const ratelimit = new Ratelimit({ redis, limiter, prefix: `${p}:${name}`, dynamicLimits: true, ephemeralCache: false });
    assert.deepEqual(await ratelimit.getDynamicLimit(), { dynamicLimit: null });
    await ratelimit.setDynamicLimit({ limit: 4 });
    assert.equal(await upstash.get(`${p}:${name}:dynamic:global`), 4, "the peer's key");
    assert.deepEqual(await ratelimit.getDynamicLimit(), { dynamicLimit: 4 });
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push(await ratelimit.limit("u"));
    assert.deepEqual(answers.map((a) => a.success), [true, true, true, true, false], name);
    assert.equal(answers[0].limit, 4);
    assert.equal((await ratelimit.getRemaining("v")).limit, 4);
    await ratelimit.setDynamicLimit({ limit: false });
    assert.deepEqual(await ratelimit.getDynamicLimit(), { dynamicLimit: null });
    assert.equal((await ratelimit.limit("v")).limit, 2);
  }
  // In memory too.
  const memory = new Ratelimit({ limiter: Ratelimit.fixedWindow(1, "1 h"), dynamicLimits: true });
  await memory.setDynamicLimit({ limit: 2 });
  assert.deepEqual([(await memory.limit("u")).success, (await memory.limit("u")).success, (await memory.limit("u")).success], [true, true, false]);
  // Not enabled: an Error, as the peer.
  const plain = new Ratelimit({ limiter: Ratelimit.fixedWindow(1, "1 h") });
  await assert.rejects(plain.setDynamicLimit({ limit: 5 }), (e) => e instanceof Error && /dynamic limits/.test(e.message));
  await assert.rejects(plain.getDynamicLimit(), (e) => e instanceof Error && /dynamic limits/.test(e.message));
});

test("one Map shares one bounded ephemeral cache between limits", { skip: noGateway }, async () => {
  const counter = countingFetch();
  const redis = new Redis({ url: URL_, token: TOKEN, fetch: counter.fetch });
  const shared = new Map();
  const p = prefix();
  const a = new Ratelimit({ redis, limiter: Ratelimit.fixedWindow(1, "1 h"), prefix: p, ephemeralCache: shared });
  const b = new Ratelimit({ redis, limiter: Ratelimit.fixedWindow(1, "1 h"), prefix: p, ephemeralCache: shared });
  await a.limit("u");
  assert.equal((await a.limit("u")).success, false);
  const requests = counter.requests;
  const blocked = await b.limit("u");
  assert.deepEqual([blocked.success, blocked.reason], [false, "cacheBlock"]);
  assert.equal(counter.requests, requests, "b used a's cache");

  // A cache of 2 entries remembers at most 2 of 3 blocked identifiers.
  const small = new Ratelimit({ redis, limiter: Ratelimit.fixedWindow(1, "1 h"), prefix: prefix(), ephemeralCache: 2 });
  for (const id of ["x", "y", "z"]) {
    await small.limit(id);
    await small.limit(id);
  }
  const before = counter.requests;
  // Asked together, so that no answer refills the cache before the others look.
  const reasons = (await Promise.all(["x", "y", "z"].map((id) => small.limit(id)))).map((r) => r.reason);
  assert.equal(reasons.filter((r) => r === "cacheBlock").length, 2, String(reasons));
  assert.equal(counter.requests, before + 1);
});

test("bad input to the newer options and methods throws or rejects naming the field", async () => {
  const limiter = Ratelimit.fixedWindow(3, "10 s");
  const throwing = [
    [() => Ratelimit.cachedFixedWindow(0, "1 s"), RangeError, "tokens"],
    [() => Ratelimit.cachedFixedWindow(1, "soon"), RangeError, "window"],
    [() => new Ratelimit({ limiter: Ratelimit.cachedFixedWindow(1, "1 s"), ephemeralCache: false }), TypeError, "ephemeralCache"],
    [() => new Ratelimit({ limiter, dynamicLimits: "yes" }), TypeError, "dynamicLimits"],
  ];
  for (const [make, kind, field] of throwing) assert.throws(make, named(kind, field), make.toString());
  const ratelimit = new Ratelimit({ limiter: Ratelimit.fixedWindow(100, "1 h"), dynamicLimits: true });
  const rejecting = [
    [() => ratelimit.blockUntilReady("u", 0), RangeError, "timeout"],
    [() => ratelimit.blockUntilReady("u", -1), RangeError, "timeout"],
    [() => ratelimit.blockUntilReady("u", NaN), RangeError, "timeout"],
    [() => ratelimit.blockUntilReady("u", -Infinity), RangeError, "timeout"],
    [() => ratelimit.blockUntilReady("u", "100"), TypeError, "timeout"],
    [() => ratelimit.blockUntilReady(null, 100), TypeError, "identifier"],
    [() => ratelimit.setDynamicLimit(5), TypeError, "options"],
    [() => ratelimit.setDynamicLimit({ limit: -1 }), RangeError, "limit"],
    [() => ratelimit.setDynamicLimit({ limit: 2 ** 53 }), RangeError, "limit"],
    [() => ratelimit.setDynamicLimit({ limit: 1.5 }), RangeError, "limit"],
    [() => ratelimit.setDynamicLimit({ limit: "5" }), TypeError, "limit"],
    [() => ratelimit.setDynamicLimit({ limit: true }), TypeError, "limit"],
  ];
  for (const [call, kind, field] of rejecting) {
    await assert.rejects(call, named(kind, field), call.toString());
    assert.equal((await ratelimit.limit("ok")).success, true, `still works after ${call}`);
  }
});

/** A free loopback port. */
async function freePort() {
  const { createServer } = await import("node:net");
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Waits until `check()` resolves truthy, polling every 50 ms, for at most 15 s. */
async function until(what, check) {
  for (let i = 0; i < 300; i++) {
    if (await check().catch(() => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${what} did not happen within 15 s`);
}

test("a stopped Redis behind a live gateway is answered by the fail mode, then recovery", { skip: !process.env.EDGELIMIT_GATEWAY_BIN && "EDGELIMIT_GATEWAY_BIN is not set" }, async (t) => {
  const { spawn, execFileSync } = await import("node:child_process");
  const { readFileSync } = await import("node:fs");
  const [redisPort, gatewayPort] = [await freePort(), await freePort()];
  // The gateway connects as the Redis ACL user of gateway/README.md, as operators run it.
  const aclLine = readFileSync(new URL("../../gateway/README.md", import.meta.url), "utf8")
    .split("\n").find((line) => line.startsWith("ACL SETUSER gateway "));
  const redisCli = (...args) => execFileSync("redis-cli", ["-p", String(redisPort), ...args], { encoding: "utf8" }).trim();
  const setUpRedis = async () => {
    await until("redis-server", async () => redisCli("ping") === "PONG");
    assert.equal(redisCli(...aclLine.replace(">PASSWORD", ">pw").split(/\s+/)), "OK");
  };
  const children = [];
  const start = (command, args) => {
    const child = spawn(command, args, { stdio: "ignore" });
    children.push(child);
    return child;
  };
  t.after(() => children.forEach((child) => child.kill("SIGKILL")));
  const startRedis = () => start("redis-server", ["--port", String(redisPort), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]);
  let redisServer = startRedis();
  await setUpRedis();
  start(process.env.EDGELIMIT_GATEWAY_BIN, ["--listen", `127.0.0.1:${gatewayPort}`, "--redis", `redis://gateway:pw@127.0.0.1:${redisPort}`, "--token", "t", "--timeout-ms", "1000"]);
  const url = `http://127.0.0.1:${gatewayPort}`;
  await until("the gateway", async () => (await fetch(`${url}/healthz`)).ok);

  const limits = Object.fromEntries(
    ["open", "closed"].map((failMode) => [
      failMode,
      new Ratelimit({ redis: new Redis({ url, token: "t" }), limiter: Ratelimit.slidingWindow(5, "1 m"), failMode, prefix: prefix() }),
    ]),
  );
  for (const ratelimit of Object.values(limits)) {
    const up = await ratelimit.limit("u");
    assert.deepEqual([up.success, up.reason], [true, undefined]);
  }

  const stopped = new Promise((resolve) => redisServer.once("exit", resolve));
  redisServer.kill("SIGKILL");
  await stopped;
  for (const [failMode, ratelimit] of Object.entries(limits)) {
    const down = await ratelimit.limit("u");
    assert.deepEqual([down.success, down.reason], [failMode === "open", "error"], failMode);
    await assertPending(down);
    await assert.rejects(ratelimit.getRemaining("u"), (error) => error instanceof Error && /HTTP 5\d\d/.test(error.message));
  }

  redisServer = startRedis();
  await setUpRedis();
  await until("recovery", async () => (await limits.closed.limit("u")).reason === undefined);
  assert.equal((await limits.open.limit("u")).success, true);
});
