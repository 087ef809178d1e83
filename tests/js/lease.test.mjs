// Leases (`lease: { tokens, ttl }`) in the npm package: separate instances on one identifier through the
// real gateway never admit past the limit, whatever the algorithm; a hot identifier costs a fraction of
// a request per decision; `returnLeases()` gives unused units back; a reset by another instance keeps
// a holder's live lease counted; bad leases throw naming the field.
//
//   bash scripts/with_gateway.sh node --test tests/js/lease.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { Ratelimit, Redis } from "./edgelimit.mjs";
import { countingFetch } from "./counting_fetch.mjs";

const url = process.env.EDGELIMIT_TEST_URL;
const token = process.env.EDGELIMIT_TEST_TOKEN;
const skip = !url && "EDGELIMIT_TEST_URL is not set (run under scripts/with_gateway.sh)";

const run = `lease-${Date.now()}-${Math.random().toString(36).slice(2)}`;
const LIMIT = 200;
const limiters = () => ({
  fixedWindow: Ratelimit.fixedWindow(LIMIT, "1 h"),
  slidingWindow: Ratelimit.slidingWindow(LIMIT, "1 h"),
  tokenBucket: Ratelimit.tokenBucket(1, "1 h", LIMIT),
  gcra: Ratelimit.gcra(LIMIT, "1 h"),
});

test("separate leasing instances on one identifier never admit past the limit", { skip }, async () => {
  for (const [name, limiter] of Object.entries(limiters())) {
    const prefix = `${run}:${name}`;
    const instances = Array.from({ length: 8 }, () => new Ratelimit({
      redis: new Redis({ url, token }),
      limiter,
      prefix,
      lease: { tokens: 20, ttl: "1 s" },
    }));
    const admitted = await Promise.all(instances.map(async (ratelimit) => {
      let count = 0;
      for (let i = 0; i < 60; i++) {
        const { success, pending } = await ratelimit.limit("hot");
        await pending;
        if (success) count++;
      }
      return count;
    }));
    const total = admitted.reduce((a, b) => a + b, 0);
    assert.ok(total <= LIMIT, `${name}: ${total} admitted of ${LIMIT}`);
    assert.ok(total >= LIMIT / 2, `${name}: only ${total} admitted of ${LIMIT}`);
  }
});

test("a hot identifier costs at most a tenth of a request per decision", { skip }, async () => {
  for (const [name, limiter] of Object.entries({
    fixedWindow: Ratelimit.fixedWindow(10_000, "1 h"),
    gcra: Ratelimit.gcra(10_000, "1 h"),
  })) {
    const counter = countingFetch();
    const ratelimit = new Ratelimit({
      redis: new Redis({ url, token, fetch: counter.fetch }),
      limiter,
      prefix: `${run}:rate:${name}`,
      lease: { tokens: 100, ttl: "1 s" },
    });
    const decisions = 1_000;
    for (let i = 0; i < decisions; i++) {
      const { success, pending } = await ratelimit.limit("hot");
      await pending;
      assert.ok(success);
    }
    assert.ok(counter.requests / decisions <= 0.1, `${name}: ${counter.requests} requests`);
  }
});

test("returnLeases() gives every unused unit back, and a reset keeps a holder's live lease counted", { skip }, async () => {
  for (const [name, limiter] of Object.entries(limiters())) {
    const prefix = `${run}:return:${name}`;
    const make = (lease) => new Ratelimit({ redis: new Redis({ url, token }), limiter, prefix, ephemeralCache: false, lease });
    const holder = make({ tokens: 20, ttl: "1 s" });
    const other = make(undefined);
    for (let i = 0; i < 3; i++) {
      const { success, pending } = await holder.limit("k");
      await pending;
      assert.ok(success, name);
    }
    // Three admitted; the lease taken on the second holds units the others see as used.
    const before = (await other.getRemaining("k")).remaining;
    assert.ok(before < LIMIT - 3, `${name}: ${before} left while the lease is held`);
    const returned = holder.returnLeases();
    assert.ok(returned instanceof Promise, name);
    assert.equal(await returned, undefined);
    const after = (await other.getRemaining("k")).remaining;
    assert.ok(after >= LIMIT - 3 && after <= LIMIT - 2, `${name}: ${after} left once returned`);
    // Returned twice: nothing more comes back.
    await holder.returnLeases();
    assert.equal((await other.getRemaining("k")).remaining, after, name);

    // A reset by another instance keeps what the holder still holds counted, so it can spend it.
    for (let i = 0; i < 3; i++) await (await holder.limit("k")).pending;
    await other.resetUsedTokens("k");
    const held = LIMIT - (await other.getRemaining("k")).remaining;
    assert.ok(held >= 1, `${name}: ${held} still held after the reset`);
    await holder.returnLeases();
  }
  assert.equal(await new Ratelimit({ redis: new Redis({ url, token }), limiter: Ratelimit.fixedWindow(10, "1 s") }).returnLeases(), undefined, "without leases");
});

test("bad leases throw naming the field", { skip }, () => {
  const redis = new Redis({ url, token });
  const limiter = Ratelimit.fixedWindow(100, "1 s");
  const make = (lease, options = { redis }) => () => new Ratelimit({ ...options, limiter, lease });
  assert.throws(make({ tokens: 0, ttl: "1 s" }), (error) => error instanceof RangeError && /lease\.tokens/.test(error.message));
  assert.throws(make({ tokens: NaN, ttl: "1 s" }), (error) => error instanceof RangeError && /lease\.tokens/.test(error.message));
  assert.throws(make({ tokens: 101, ttl: "1 s" }), (error) => error instanceof RangeError && /tokens/.test(error.message));
  assert.throws(make({ tokens: 10, ttl: "2 s" }), (error) => error instanceof RangeError && /ttl/.test(error.message));
  assert.throws(make({ tokens: 10, ttl: NaN }), (error) => error instanceof RangeError && /lease\.ttl/.test(error.message));
  assert.throws(make({ tokens: 10, ttl: "1 s" }, {}), /leases in the memory store/);
  // Issue 40: a lease is spent with no request, so it could not obey a pause or a lower limit at once.
  assert.throws(make({ tokens: 10, ttl: "1 s" }, { redis, dynamicLimits: true }), (error) => error instanceof TypeError && /lease/.test(error.message) && /dynamicLimits/.test(error.message));
});
