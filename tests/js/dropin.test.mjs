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

// --- Inputs and settings of the peer, tried as a migrating user would (issue 13) ---

const blackhole = process.env.EDGELIMIT_TEST_BLACKHOLE_URL;

test("redis: an @upstash/redis instance works in both, sharing one limit", { skip }, async () => {
  const upstash = new peerRedis.Redis({ url, token, enableTelemetry: false });
  const prefix = `${run}:upstash-instance`;
  const both = [peerRatelimit.Ratelimit, edgelimit.Ratelimit].map(
    (Ratelimit) => new Ratelimit({ redis: upstash, limiter: Ratelimit.fixedWindow(4, "1 h"), prefix, ephemeralCache: false }),
  );
  const answers = [];
  for (let i = 0; i < 6; i++) answers.push((await both[i % 2].limit("u")).success);
  assert.deepEqual(answers, [true, true, true, true, false, false]);
  // An @upstash/redis over a custom requester has no URL or token to read: said, not guessed.
  const requester = new peerRedis.Redis({ request: async () => ({ result: null }) });
  assert.throws(
    () => new edgelimit.Ratelimit({ redis: requester, limiter: edgelimit.Ratelimit.fixedWindow(4, "1 h") }),
    (error) => error instanceof TypeError && error.message.includes("`redis`"),
  );
});

test("Redis.fromEnv reads Vercel's KV_REST_API_URL and _TOKEN in both", { skip }, async () => {
  const saved = { ...process.env };
  try {
    delete process.env.UPSTASH_REDIS_REST_URL;
    delete process.env.UPSTASH_REDIS_REST_TOKEN;
    Object.assign(process.env, { KV_REST_API_URL: url, KV_REST_API_TOKEN: token });
    const prefix = `${run}:kv-env`;
    const both = [
      new peerRatelimit.Ratelimit({
        redis: peerRedis.Redis.fromEnv({ enableTelemetry: false }),
        limiter: peerRatelimit.Ratelimit.fixedWindow(2, "1 h"),
        prefix,
        ephemeralCache: false,
      }),
      new edgelimit.Ratelimit({ redis: edgelimit.Redis.fromEnv(), limiter: edgelimit.Ratelimit.fixedWindow(2, "1 h"), prefix, ephemeralCache: false }),
    ];
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push((await both[i % 2].limit("u")).success);
    assert.deepEqual(answers, [true, true, false, false]);
    // As the peer, UPSTASH_REDIS_REST_* come first.
    process.env.UPSTASH_REDIS_REST_URL = "http://127.0.0.1:9";
    assert.equal(edgelimit.Redis.fromEnv().url, "http://127.0.0.1:9");
  } finally {
    for (const name of ["KV_REST_API_URL", "KV_REST_API_TOKEN", "UPSTASH_REDIS_REST_URL", "UPSTASH_REDIS_REST_TOKEN"]) {
      delete process.env[name];
    }
    Object.assign(process.env, saved);
  }
});

test("inputs the peer accepts are accepted and answered the same: empty and number identifiers, null options and rate", { skip }, async () => {
  const answersOf = async ({ Ratelimit, Redis }, prefix) => {
    const ratelimit = new Ratelimit({ redis: new Redis({ url, token }), limiter: Ratelimit.fixedWindow(4, "1 h"), prefix, ephemeralCache: false });
    const answers = [];
    for (const [label, call] of [
      ["empty", () => ratelimit.limit("")],
      ["empty again", () => ratelimit.limit("", { rate: 2 })],
      ["number", () => ratelimit.limit(42)],
      ["its string shares the key", () => ratelimit.limit("42")],
      ["null options", () => ratelimit.limit("n", null)],
      ["null rate", () => ratelimit.limit("n", { rate: null })],
      ["undefined rate", () => ratelimit.limit("n", { rate: undefined })],
    ]) {
      const { success, remaining, limit, reason } = await call();
      answers.push({ label, success, remaining, limit, reason });
    }
    answers.push({ label: "getRemaining of the empty identifier", remaining: (await ratelimit.getRemaining("")).remaining });
    return answers;
  };
  const peer = await answersOf(libraries.peer, `${run}:inputs:peer`);
  const ours = await answersOf(libraries.edgelimit, `${run}:inputs:edgelimit`);
  assert.deepEqual(ours, peer);
  assert.deepEqual(ours.map((a) => a.remaining), [3, 1, 3, 2, 3, 2, 1, 1]);
});

test("durations are rounded to whole milliseconds as the peer rounds them", { skip }, async () => {
  const inspect = new peerRedis.Redis({ url, token });
  const lengths = async ({ Ratelimit, Redis }, prefix) => {
    const redis = new Redis({ url, token });
    const out = [];
    for (const window of ["0.3333333333 h", "1.5 s", "0.0005 m"]) {
      const ratelimit = new Ratelimit({ redis, limiter: Ratelimit.fixedWindow(1, window), prefix: `${prefix}:${window}`, ephemeralCache: false });
      const { reset } = await ratelimit.limit("u");
      // The window's length: its counter is `<prefix>:u:<window number>`, and the window ends at
      // (number + 1) × length.
      const [key] = await inspect.keys(`${prefix}:${window}:u:*`);
      const number = Number(key.slice(key.lastIndexOf(":") + 1));
      out.push([window, reset / (number + 1)]);
    }
    // "1.5 ms" is 2 ms in both; "0.4 ms" is less than 1 ms in both.
    assert.ok(Ratelimit.fixedWindow(1, "1.5 ms"));
    assert.throws(() => Ratelimit.fixedWindow(1, "0.4 ms"));
    return out;
  };
  const peer = await lengths(libraries.peer, `${run}:durations:peer`);
  const ours = await lengths(libraries.edgelimit, `${run}:durations:edgelimit`);
  assert.deepEqual(ours, peer);
  assert.deepEqual(ours.map(([, length]) => length), [1_200_000, 1_500, 30]);
});

test("timeout and blockUntilReady take what the peer takes: fractions, 2^31 ms and more", { skip }, async () => {
  for (const { Ratelimit, Redis } of Object.values(libraries)) {
    const redis = new Redis({ url, token });
    const ratelimit = new Ratelimit({ redis, limiter: Ratelimit.fixedWindow(5, "1 h"), prefix: `${run}:timers:${Ratelimit === edgelimit.Ratelimit}`, timeout: 4000.5 });
    const answer = await ratelimit.limit("u");
    assert.deepEqual([answer.success, answer.reason], [true, undefined]);
    for (const timeout of [1.5, 2 ** 31, 2 ** 40, Infinity]) {
      const blocked = await ratelimit.blockUntilReady(`b-${timeout}`, timeout);
      assert.equal(blocked.success, true, `blockUntilReady(${timeout})`);
    }
  }
});

test("the timeout answer: the peer's shape but for limit and reset, which stay meaningful (documented)", { skip: skip || (!blackhole && "no black hole") }, async () => {
  const answers = {};
  // The peer never aborts its request to the black hole: this signal does, so that the test can end.
  const abandon = new AbortController();
  const peerOptions = { retry: false, enableTelemetry: false, signal: abandon.signal };
  for (const [name, { Ratelimit, Redis }] of Object.entries(libraries)) {
    const redis = new Redis({ url: blackhole, token, ...(name === "peer" ? peerOptions : {}) });
    const ratelimit = new Ratelimit({ redis, limiter: Ratelimit.fixedWindow(4, "1 h"), timeout: 200, ephemeralCache: false });
    const before = Date.now();
    const { pending, ...answer } = await ratelimit.limit("u");
    answers[name] = { ...answer, reset: answer.reset >= before ? "now" : answer.reset };
  }
  abandon.abort();
  assert.deepEqual(answers.peer, { success: true, limit: 0, remaining: 0, reset: 0, reason: "timeout" });
  assert.deepEqual(answers.edgelimit, { success: true, limit: 4, remaining: 0, reset: "now", reason: "timeout" });
});

test("timeout bounds the whole call: EVALSHA, NOSCRIPT, then EVAL", { skip }, async () => {
  const upstash = new peerRedis.Redis({ url, token, enableTelemetry: false });
  // Each request waits 150 ms before it is sent: two of them cannot fit in 250 ms.
  const slow = (input, init) => new Promise((resolve) => setTimeout(resolve, 150)).then(() => fetch(input, init));
  const ratelimit = new edgelimit.Ratelimit({
    redis: new edgelimit.Redis({ url, token, fetch: slow }),
    limiter: edgelimit.Ratelimit.fixedWindow(4, "1 h"),
    prefix: `${run}:whole-call`,
    timeout: 250,
  });
  await upstash.scriptFlush();
  const answer = await ratelimit.limit("u");
  assert.equal(answer.reason, "timeout");
  // Once the script is loaded, one request fits.
  await new Promise((resolve) => setTimeout(resolve, 400));
  assert.equal((await ratelimit.limit("u")).reason, undefined);
});

test("a Response whose getters throw rejects naming the custom fetch, a fetch whose Promise rejects is answered by the fail mode, never an unhandled rejection (the peer rejects)", { skip }, async () => {
  const unhandled = [];
  const record = (reason) => unhandled.push(reason);
  process.on("unhandledRejection", record);
  // The real Response of the real gateway, but for one getter (or all: "*"), which throws.
  const realFetch = globalThis.fetch;
  const throwing = (getter) => async (input, init) => {
    const response = await realFetch(input, init);
    return new Proxy(response, {
      get: (target, key) => {
        if (getter === "*" || key === getter) throw new Error(`no ${String(key)}`);
        const value = Reflect.get(target, key);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  };
  try {
    for (const getter of ["status", "arrayBuffer", "*"]) {
      for (const failMode of ["open", "closed"]) {
        const ratelimit = new edgelimit.Ratelimit({
          redis: new edgelimit.Redis({ url, token, fetch: throwing(getter) }),
          limiter: edgelimit.Ratelimit.fixedWindow(4, "1 h"),
          failMode,
          // Far longer than the call takes: an answer by the timeout would be a "timeout".
          timeout: 2000,
        });
        if (getter === "*") {
          // Its `then` throws too: the custom fetch's Promise rejects, as a network failure does.
          const answer = await ratelimit.limit("u");
          assert.deepEqual([answer.success, answer.reason], [failMode === "open", "error"], `${getter}, ${failMode}`);
        } else {
          await assert.rejects(ratelimit.limit("u"), (error) => error instanceof TypeError && /custom `fetch`/.test(error.message), `${getter}, ${failMode}`);
        }
      }
    }
    // The peer, over the same kind of fetch, rejects.
    const saved = globalThis.fetch;
    globalThis.fetch = throwing("*");
    try {
      const peer = new peerRatelimit.Ratelimit({
        redis: new peerRedis.Redis({ url, token, retry: false, enableTelemetry: false }),
        limiter: peerRatelimit.Ratelimit.fixedWindow(4, "1 h"),
      });
      await assert.rejects(peer.limit("u"));
    } finally {
      globalThis.fetch = saved;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(unhandled, []);
  } finally {
    process.off("unhandledRejection", record);
  }
});

test("a fractional or negative dynamic limit written through the peer is compared as the peer compares it", { skip }, async () => {
  const upstash = new peerRedis.Redis({ url, token, enableTelemetry: false });
  for (const stored of ["2.5", "0.5", "-1", "3"]) {
    for (const name of ["fixedWindow", "slidingWindow", "tokenBucket"]) {
      const successes = {};
      for (const [library, { Ratelimit, Redis }] of Object.entries(libraries)) {
        const prefix = `${run}:stored-limit:${stored}:${name}:${library}`;
        await upstash.set(`${prefix}:dynamic:global`, stored);
        const ratelimit = new Ratelimit({ redis: new Redis({ url, token }), limiter: limiters[name](Ratelimit), prefix, dynamicLimits: true, ephemeralCache: false });
        successes[library] = [];
        for (let i = 0; i < 4; i++) successes[library].push((await ratelimit.limit("u")).success);
      }
      assert.deepEqual(successes.edgelimit, successes.peer, `${name} under a stored limit of ${stored}`);
      // The peer's sliding window admits while the count is below the limit, the others while it is
      // at most the limit.
      const admitted = Math.max(0, (name === "slidingWindow" ? Math.ceil : Math.floor)(Number(stored)));
      assert.deepEqual(successes.edgelimit, [0, 1, 2, 3].map((i) => i < admitted), `${name}, ${stored}`);
    }
  }
});

for (const name of ["fixedWindow", "tokenBucket"]) {
  test(`${name}: refund credit the peer writes is honoured by edgelimit, not erased`, { skip }, async () => {
    const make = ({ Ratelimit, Redis }, prefix) =>
      new Ratelimit({ redis: new Redis({ url, token }), limiter: limiters[name](Ratelimit), prefix, ephemeralCache: false });
    // The same steps, taken by the peer alone and by both in turn: a refund of 3 on a fresh
    // identifier (a negative counter, a bucket above its maximum), then eight requests.
    const run_ = async (turns, prefix) => {
      const instances = turns.map((library) => make(libraries[library], prefix));
      await (await instances[0].limit("u", { rate: -3 })).pending;
      const answers = [];
      for (let i = 0; i < 8; i++) {
        const { success, remaining } = await instances[(i + 1) % instances.length].limit("u");
        answers.push([success, remaining]);
      }
      return answers;
    };
    const peerAlone = await run_(["peer"], `${run}:credit:${name}:peer`);
    const mixed = await run_(["peer", "edgelimit"], `${run}:credit:${name}:mixed`);
    assert.deepEqual(mixed, peerAlone);
    assert.deepEqual(mixed.map(([success]) => success), [true, true, true, true, true, true, true, false]);
    assert.deepEqual(mixed.slice(0, 7).map(([, remaining]) => remaining), [6, 5, 4, 3, 2, 1, 0]);
  });
}

test("cachedFixedWindow with dynamicLimits counts against the configured limit in both, with the peer's warning", { skip }, async () => {
  const upstash = new peerRedis.Redis({ url, token, enableTelemetry: false });
  const warnings = [];
  const warn = console.warn;
  console.warn = (message) => warnings.push({ message });
  try {
    const answers = {};
    for (const [library, { Ratelimit, Redis }] of Object.entries(libraries)) {
      const prefix = `${run}:cached-dynamic:${library}`;
      await upstash.set(`${prefix}:dynamic:global`, 4);
      const before = warnings.length;
      const ratelimit = new Ratelimit({ redis: new Redis({ url, token }), limiter: Ratelimit.cachedFixedWindow(2, "1 h"), prefix, dynamicLimits: true });
      if (library === "edgelimit") {
        const said = "Dynamic limits are not yet supported for cachedFixedWindow algorithm";
        assert.ok(warnings.slice(before).some(({ message }) => String(message).includes(said)), "edgelimit warns as the peer does");
      }
      answers[library] = [];
      for (let i = 0; i < 4; i++) {
        const { success, limit, pending } = await ratelimit.limit("u");
        await pending;
        answers[library].push([success, limit]);
      }
      assert.deepEqual(await ratelimit.getDynamicLimit(), { dynamicLimit: 4 }, "still stored and read");
    }
    assert.deepEqual(answers.edgelimit, answers.peer);
    assert.deepEqual(answers.edgelimit.map(([success]) => success), [true, true, false, false]);
  } finally {
    console.warn = warn;
  }
});
