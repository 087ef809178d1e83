// No option is silently ignored: an option the package does not know throws a TypeError that names it
// and suggests the nearest known name; the options of @upstash/ratelimit and @upstash/redis that the
// package shares are known; after any of these errors the instance keeps working.
//
//   bash scripts/with_gateway.sh node --test tests/js/options.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { Ratelimit, Redis } from "./edgelimit.mjs";

/** Checks a TypeError saying "unknown option `key`" and then `hint`. */
const unknown = (key, hint) => (error) => {
  assert.ok(error instanceof TypeError, `expected a TypeError, got ${error?.constructor?.name}: ${error?.message}`);
  assert.ok(error.message.includes(`unknown option \`${key}\``), error.message);
  assert.ok(error.message.includes(hint), `"${error.message}" says ${hint}`);
  return true;
};

test("an unknown option of new Ratelimit throws, naming it and the nearest known name", async () => {
  const limiter = Ratelimit.fixedWindow(3, "10 s");
  const cases = [
    [{ timout: 100 }, "timout", "did you mean `timeout`?"],
    [{ prefx: "p" }, "prefx", "did you mean `prefix`?"],
    [{ ephemeralcache: false }, "ephemeralcache", "did you mean `ephemeralCache`?"],
    [{ failmode: "closed" }, "failmode", "did you mean `failMode`?"],
    [{ dynamicLimit: true }, "dynamicLimit", "did you mean `dynamicLimits`?"],
    [{ enableProtect: true }, "enableProtect", "did you mean `enableProtection`?"],
    [{ rate: 2 }, "rate", "known options: redis, limiter"],
    [{ ctx: {} }, "ctx", "known options: "],
  ];
  const ratelimit = new Ratelimit({ limiter });
  for (const [extra, key, hint] of cases) {
    assert.throws(() => new Ratelimit({ limiter, ...extra }), unknown(key, hint), JSON.stringify(extra));
    assert.equal((await ratelimit.limit(`after-${key}`)).success, true);
  }
  // A misspelt limiter is reported as the missing limiter it is (checked first).
  assert.throws(() => new Ratelimit({ limter: limiter }), /limiter/);
});

test("the options @upstash/ratelimit shares are known; their bad values throw", () => {
  const limiter = Ratelimit.fixedWindow(3, "10 s");
  const shared = {
    limiter,
    prefix: "p",
    ephemeralCache: new Map(),
    timeout: 1000,
    dynamicLimits: false,
    analytics: false,
    enableProtection: false,
    denyListThreshold: 6,
    cacheScripts: true,
    enableTelemetry: false,
  };
  assert.ok(new Ratelimit(shared) instanceof Ratelimit);
  for (const flag of ["cacheScripts", "enableTelemetry"]) {
    assert.throws(() => new Ratelimit({ limiter, [flag]: "yes" }), (error) => {
      assert.ok(error instanceof TypeError && error.message.includes(`\`${flag}\` must be a boolean`), error.message);
      return true;
    });
  }
});

test("an unknown option of new Redis throws; enableTelemetry is known", () => {
  const config = { url: "http://127.0.0.1:9", token: "t" };
  assert.ok(new Redis({ ...config, enableTelemetry: false }) instanceof Redis);
  assert.throws(() => new Redis({ ...config, enableTelemetry: 1 }), /enableTelemetry/);
  assert.throws(() => new Redis({ ...config, fetcher: fetch }), unknown("fetcher", "did you mean `fetch`?"));
  assert.throws(() => new Redis({ ...config, retry: false }), unknown("retry", "known options: url, token, fetch"));
});

test("an unknown option of limit() rejects, naming it; the instance keeps working", async () => {
  const ratelimit = new Ratelimit({ limiter: Ratelimit.fixedWindow(100, "1 h") });
  const cases = [
    [{ rat: 2 }, "rat", "did you mean `rate`?"],
    [{ rate: 1, ipAddress: "1.2.3.4" }, "ipAddress", "known options: rate, ip"],
    [{ useragent: "x" }, "useragent", "did you mean `userAgent`?"],
    [Object.assign(Object.create({ inherited: 1 }), { rate: 1 }), "inherited", "known options"],
  ];
  for (const [options, key, hint] of cases) {
    await assert.rejects(ratelimit.limit("u", options), unknown(key, hint), key);
    assert.equal((await ratelimit.limit("u")).remaining, 99, "nothing was taken, and it still works");
    await ratelimit.resetUsedTokens("u");
  }
  // The peer's limit options are known.
  const peerOptions = { rate: 2, ip: "1.2.3.4", userAgent: "ua", country: "DE", geo: { city: "Berlin" } };
  assert.equal((await ratelimit.limit("u", peerOptions)).remaining, 98);
  // A getter that throws rejects with its error.
  const throwing = { get rate() { throw new Error("boom"); } };
  await assert.rejects(ratelimit.limit("u", throwing), /boom/);
});

test("Redis's clock decides unless localClock: true; localClock is a boolean", () => {
  const redis = new Redis({ url: "http://127.0.0.1:9", token: "t" });
  const limiter = Ratelimit.fixedWindow(3, "10 s");
  for (const localClock of [true, false, undefined]) {
    assert.ok(new Ratelimit({ redis, limiter, localClock }) instanceof Ratelimit, String(localClock));
    assert.ok(new Ratelimit({ limiter, localClock }) instanceof Ratelimit, String(localClock));
  }
  assert.throws(() => new Ratelimit({ redis, limiter, localClock: "local" }), (error) => {
    assert.ok(error instanceof TypeError && error.message.includes("`localClock` must be a boolean"), error.message);
    return true;
  });
  assert.throws(() => new Ratelimit({ redis, limiter, clock: "local" }), unknown("clock", "known options"));
});
