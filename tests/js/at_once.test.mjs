// `limit()` with its identifier written in place, answered in one crossing when it needs no I/O
// (src/wasm/at_once.rs, pkg-template/ratelimit.js): a store in this process answers with no call from
// WebAssembly into JavaScript; on Redis the compiled decision reads the identifier in place. These tests
// check that the answers are those of the compiled path (`limit(identifier, { rate: 1 })` takes it),
// for every algorithm, with and without the ephemeral cache, on identifiers in place or too long for
// it, and that bad input still rejects as it does there.
//
//   bash scripts/with_gateway.sh node --test tests/js/at_once.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { linkPackage } from "../../scripts/link_pkg.mjs";

linkPackage(fileURLToPath(new URL(".", import.meta.url)));
const { Ratelimit, Redis } = await import("edgelimit");

const url = process.env.EDGELIMIT_TEST_URL;
const token = process.env.EDGELIMIT_TEST_TOKEN;

const limiters = {
  fixedWindow: () => Ratelimit.fixedWindow(5, "1 h"),
  slidingWindow: () => Ratelimit.slidingWindow(5, "1 h"),
  tokenBucket: () => Ratelimit.tokenBucket(1, "1 h", 5),
  gcra: () => Ratelimit.gcra(5, "1 h"),
};

/** The answer without `pending` and with `reset` to the second: both paths read the clock apart. */
const plain = ({ pending, reset, ...rest }) => ({ ...rest, resetS: Math.round(reset / 1000) });

test("every algorithm answers in one crossing as on the compiled path, admitting exactly the limit", async () => {
  for (const [name, limiter] of Object.entries(limiters)) {
    for (const ephemeralCache of [false, true]) {
      const fast = new Ratelimit({ limiter: limiter(), ephemeralCache });
      const compiled = new Ratelimit({ limiter: limiter(), ephemeralCache });
      for (let call = 0; call < 9; call++) {
        const identifier = call % 2 ? "user:1" : 7;
        const ours = await fast.limit(identifier);
        const theirs = await compiled.limit(identifier, { rate: 1 });
        assert.deepEqual(plain(ours), plain(theirs), `${name}, ephemeralCache ${ephemeralCache}, call ${call}`);
        assert.ok(ours.pending instanceof Promise);
        assert.deepEqual(Object.keys(ours), Object.keys(theirs), `${name}: the same fields in the same order`);
      }
      const admitted = { "user:1": 0, 7: 0 };
      const again = new Ratelimit({ limiter: limiter(), ephemeralCache });
      for (let call = 0; call < 40; call++) {
        const identifier = call % 2 ? "user:1" : 7;
        if ((await again.limit(identifier)).success) admitted[identifier]++;
      }
      assert.deepEqual(admitted, { "user:1": 5, 7: 5 }, `${name}, ephemeralCache ${ephemeralCache}`);
    }
  }
});

test("a denial the ephemeral cache knows says cacheBlock, as on the compiled path", async () => {
  const ratelimit = new Ratelimit({ limiter: Ratelimit.fixedWindow(1, "1 h") });
  assert.equal((await ratelimit.limit("u")).success, true);
  const denied = await ratelimit.limit("u"); // the store's denial, which the cache learns
  assert.equal(denied.success, false);
  assert.equal(denied.reason, undefined);
  const cached = await ratelimit.limit("u");
  assert.equal(cached.success, false);
  assert.equal(cached.reason, "cacheBlock");
  assert.equal(cached.remaining, 0);
  assert.equal(cached.limit, 1);
});

test("answers stay right while the memory grows under the view the answers are read from", async () => {
  const ratelimit = new Ratelimit({ limiter: Ratelimit.fixedWindow(3, "1 h"), ephemeralCache: false });
  for (let key = 0; key < 60_000; key++) {
    const answer = await ratelimit.limit(`grow:${key}:${"x".repeat(key % 64)}`);
    if (answer.remaining !== 2 || answer.limit !== 3 || !answer.success) assert.fail(`key ${key}: ${JSON.stringify(answer)}`);
  }
  const last = await ratelimit.limit("grow:0:");
  assert.equal(last.remaining, 1);
});

test("bad identifiers reject as on the compiled path, and the limit keeps working", async () => {
  const ratelimit = new Ratelimit({ limiter: Ratelimit.fixedWindow(5, "1 h"), dynamicLimits: true });
  await assert.rejects(ratelimit.limit("a\uD800b"), (error) => error instanceof TypeError && /identifier/.test(error.message));
  await assert.rejects(ratelimit.limit("x".repeat(8 * 1024 + 1)), (error) => error instanceof RangeError && /identifier/.test(error.message));
  await assert.rejects(ratelimit.limit("dynamic"), (error) => error instanceof TypeError && /dynamic/.test(error.message));
  await assert.rejects(ratelimit.limit({}), (error) => error instanceof TypeError && /identifier/.test(error.message));
  assert.equal((await ratelimit.limit("\uFFFD")).remaining, 4, "U+FFFD itself is an identifier");
  assert.equal((await ratelimit.limit("é")).remaining, 4);
  assert.equal((await ratelimit.limit("é")).remaining, 3);
  assert.equal((await ratelimit.limit("")).remaining, 4, "the empty identifier, as the peer keys it");
});

test("identifiers of any length and script are answered alike, in place or not", async () => {
  const fast = new Ratelimit({ limiter: Ratelimit.fixedWindow(3, "1 h"), ephemeralCache: false });
  const compiled = new Ratelimit({ limiter: Ratelimit.fixedWindow(3, "1 h"), ephemeralCache: false });
  // Around the 256 bytes written in place (src/wasm/at_once.rs): ASCII, a two-byte letter crossing
  // the end, four-byte emoji, and long ones that take the compiled path.
  const identifiers = [
    "a".repeat(255),
    "a".repeat(256),
    "a".repeat(257),
    `${"a".repeat(255)}é`,
    `${"a".repeat(254)}é`,
    "😀".repeat(64),
    "😀".repeat(65),
    "x".repeat(8 * 1024),
  ];
  for (const identifier of identifiers) {
    for (let call = 0; call < 4; call++) {
      const ours = await fast.limit(identifier);
      const theirs = await compiled.limit(identifier, { rate: 1 });
      assert.deepEqual(plain(ours), plain(theirs), `${identifier.length} units, call ${call}`);
    }
  }
  // Each is its own key: a longer identifier never reads a shorter one's bytes left in place.
  for (const identifier of ["bb", "b"]) assert.equal((await fast.limit(identifier)).remaining, 2, identifier);
});

test("a dynamic limit set in memory applies to decisions answered in one crossing", async () => {
  const ratelimit = new Ratelimit({ limiter: Ratelimit.fixedWindow(5, "1 h"), dynamicLimits: true, ephemeralCache: false });
  assert.equal((await ratelimit.limit("d")).limit, 5);
  await ratelimit.setDynamicLimit({ limit: 2 });
  const answer = await ratelimit.limit("d");
  assert.deepEqual([answer.limit, answer.remaining, answer.success], [2, 0, true]);
  assert.equal((await ratelimit.limit("d")).success, false);
});

test("on Redis, identifiers written in place count as on the compiled path, and bad ones reject alike", { skip: !url && "EDGELIMIT_TEST_URL is not set" }, async () => {
  const prefix = `in-place-${Date.now()}`;
  const ratelimit = new Ratelimit({ redis: new Redis({ url, token }), limiter: Ratelimit.fixedWindow(3, "1 h"), prefix, ephemeralCache: false, dynamicLimits: true });
  // The written path (no options) and the compiled one (`{ rate: 1 }`) take from the same counter.
  for (const identifier of ["user:1", 42, "é", "😀".repeat(64), "😀".repeat(65), "a".repeat(257), "\uFFFD"]) {
    const seen = [];
    for (let call = 0; call < 4; call++) {
      const answer = call % 2 ? await ratelimit.limit(identifier, { rate: 1 }) : await ratelimit.limit(identifier);
      seen.push([answer.success, answer.remaining]);
    }
    assert.deepEqual(seen, [[true, 2], [true, 1], [true, 0], [false, 0]], String(identifier).slice(0, 20));
  }
  await assert.rejects(ratelimit.limit("a\uD800b"), (error) => error instanceof TypeError && /identifier/.test(error.message));
  await assert.rejects(ratelimit.limit("dynamic"), (error) => error instanceof TypeError && /dynamic/.test(error.message));
  await assert.rejects(ratelimit.limit("x".repeat(8 * 1024 + 1)), (error) => error instanceof RangeError && /identifier/.test(error.message));
  assert.equal((await ratelimit.limit("after")).remaining, 2, "the limit keeps working");
});
