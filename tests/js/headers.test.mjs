// rateLimitHeaders from the built package (pkg/), imported under the `node` condition:
//
//   node --test tests/js/headers.test.mjs
//
// Exact header values at the boundaries of rounding, the draft styles, a real limiter whose denied
// client is admitted after waiting Retry-After, and bad input naming its field. No gateway needed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Ratelimit, rateLimitHeaders } from "./edgelimit.mjs";

const NOW = 1_700_000_040_000;

test("the separate fields: what is left rounded down, seconds until the reset rounded up", () => {
  assert.deepEqual(rateLimitHeaders({ success: true, limit: 10, remaining: 3.5, reset: NOW + 4_001 }, { now: NOW }), {
    "RateLimit-Limit": "10",
    "RateLimit-Remaining": "3",
    "RateLimit-Reset": "5",
  });
  const at = (reset, now = NOW) => rateLimitHeaders({ success: true, limit: 10, remaining: 0, reset }, { now })["RateLimit-Reset"];
  assert.equal(at(NOW + 5_000), "5", "exactly on a second");
  assert.equal(at(NOW + 1), "1", "a millisecond is a second");
  assert.equal(at(NOW, NOW + 10), "0", "already past");
});

test("a denial adds Retry-After: the whole seconds that pass the reset", () => {
  const denied = (reset) => rateLimitHeaders({ success: false, limit: 10, remaining: 0, reset }, { now: NOW });
  assert.deepEqual(denied(NOW + 2_500), {
    "RateLimit-Limit": "10",
    "RateLimit-Remaining": "0",
    "RateLimit-Reset": "3",
    "Retry-After": "3",
  });
  assert.equal(denied(NOW + 2_999)["Retry-After"], "3");
  // On a whole second, one more: a client arriving at the reset itself may still be denied.
  assert.deepEqual(denied(NOW + 2_000), {
    "RateLimit-Limit": "10",
    "RateLimit-Remaining": "0",
    "RateLimit-Reset": "2",
    "Retry-After": "3",
  });
  assert.equal(denied(NOW)["Retry-After"], "1", "a fail-closed answer resets now");
  assert.equal(rateLimitHeaders({ success: true, limit: 10, remaining: 0, reset: NOW + 2_500 }, { now: NOW })["Retry-After"], undefined);
});

test("the draft styles combine the fields and add the policy", () => {
  const response = { success: false, limit: 10, remaining: 3, reset: NOW + 4_500, pending: Promise.resolve() };
  assert.deepEqual(rateLimitHeaders(response, { now: NOW, style: "draft-07", window: "10 s" }), {
    RateLimit: "limit=10, remaining=3, reset=5",
    "RateLimit-Policy": "10;w=10",
    "Retry-After": "5",
  });
  assert.deepEqual(rateLimitHeaders(response, { now: NOW, style: "draft-07" }), {
    RateLimit: "limit=10, remaining=3, reset=5",
    "Retry-After": "5",
  });
  assert.deepEqual(rateLimitHeaders(response, { now: NOW, style: "draft-11", window: 1_500 }), {
    RateLimit: '"default";r=3;t=5',
    "RateLimit-Policy": '"default";q=10;w=2',
    "Retry-After": "5",
  });
  assert.deepEqual(rateLimitHeaders({ ...response, success: true }, { now: NOW, style: "draft-11" }), {
    RateLimit: '"default";r=3;t=5',
    "RateLimit-Policy": '"default";q=10',
  });
});

for (const [name, limiter] of [["fixedWindow", () => Ratelimit.fixedWindow(2, "1 s")], ["slidingWindow", () => Ratelimit.slidingWindow(2, "1 s")]]) {
  test(`a client that waits Retry-After is admitted (a real in-memory ${name})`, async () => {
    const ratelimit = new Ratelimit({ limiter: limiter(), ephemeralCache: false });
    // Not in the last 100 ms of a second, so that the three calls share one window.
    while (Date.now() % 1_000 > 900) await new Promise((resolve) => setTimeout(resolve, 10));
    await ratelimit.limit("u");
    const last = await ratelimit.limit("u");
    const lastHeaders = rateLimitHeaders(last, { now: Date.now() });
    assert.equal(last.success, true);
    assert.equal(lastHeaders["RateLimit-Remaining"], "0");
    assert.equal(lastHeaders["Retry-After"], undefined);

    const denied = await ratelimit.limit("u");
    const headers = rateLimitHeaders(denied);
    assert.equal(denied.success, false);
    assert.deepEqual(headers, { "RateLimit-Limit": "2", "RateLimit-Remaining": "0", "RateLimit-Reset": "1", "Retry-After": "1" });
    await new Promise((resolve) => setTimeout(resolve, Number(headers["Retry-After"]) * 1_000));
    assert.equal((await ratelimit.limit("u")).success, true, "admitted after Retry-After");
  });
}

test("bad input throws a TypeError or RangeError naming the field", () => {
  const ok = { success: true, limit: 10, remaining: 3, reset: NOW };
  const cases = [
    [() => rateLimitHeaders(null), TypeError, /`response`/],
    [() => rateLimitHeaders(undefined), TypeError, /`response`/],
    [() => rateLimitHeaders({ ...ok, success: "yes" }), TypeError, /`success`/],
    [() => rateLimitHeaders({ ...ok, limit: "10" }), TypeError, /`limit`/],
    [() => rateLimitHeaders({ ...ok, limit: -1 }), RangeError, /`limit`/],
    [() => rateLimitHeaders({ ...ok, remaining: undefined }), TypeError, /`remaining`/],
    [() => rateLimitHeaders({ ...ok, remaining: -1 }), RangeError, /`remaining`/],
    [() => rateLimitHeaders({ ...ok, reset: NaN }), RangeError, /`reset`/],
    [() => rateLimitHeaders(ok, 5), TypeError, /`options`/],
    [() => rateLimitHeaders(ok, { now: "now" }), TypeError, /`now`/],
    [() => rateLimitHeaders(ok, { style: "combined" }), RangeError, /`style`.*got "combined"/],
    [() => rateLimitHeaders(ok, { style: 7 }), TypeError, /`style`/],
    [() => rateLimitHeaders(ok, { window: "soon" }), RangeError, /`window`/],
  ];
  for (const [call, type, message] of cases) {
    assert.throws(call, (error) => error instanceof type && message.test(error.message) && error.message.startsWith("rateLimitHeaders: "), String(call));
  }
});
