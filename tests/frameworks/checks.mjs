// The assertions every framework test makes of a route limited to 5 requests a day: 8 requests, 5
// admitted with their RateLimit-* headers, 3 refused, and, on Redis, the count the fixed window left.
import assert from "node:assert/strict";
import { Redis } from "@upstash/redis";
import { requests } from "./harness.mjs";

const DAY_SECONDS = 86_400;

/** A fresh identifier for one route of one run: no two routes of the suite share a counter. */
export function identifier(route) {
  return `fw-${route.replace(/\W+/g, "-")}-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
}

/**
 * Sends 8 requests to `url` (with `headers`) and asserts what a limit of 5 a day answers
 * (`assertAnswers`).
 */
export async function assertLimited(url, headers, options) {
  assertAnswers(url, await requests(url, 8, headers), options);
}

/**
 * Asserts 8 answers `{ status, headers }` (header names in lower case) of a limit of 5 a day: 5 × 200
 * then 3 × 429, and the RateLimit-* headers of each (with `Retry-After` on a refusal, unless `peer`,
 * whose headers the app writes from its answer).
 */
export function assertAnswers(what, answers, { peer = false } = {}) {
  assert.deepEqual(
    answers.map(({ status }) => status),
    [200, 200, 200, 200, 200, 429, 429, 429],
    `${what}: statuses`,
  );
  answers.forEach(({ headers: got }, index) => {
    const which = `${what}: headers of answer ${index + 1}: ${JSON.stringify(got)}`;
    assert.equal(got["ratelimit-limit"], "5", which);
    assert.equal(got["ratelimit-remaining"], String(Math.max(0, 4 - index)), which);
    const reset = Number(got["ratelimit-reset"]);
    assert.ok(Number.isInteger(reset) && reset >= 0 && reset <= DAY_SECONDS, which);
    if (peer) return;
    if (index < 5) assert.equal(got["retry-after"], undefined, which);
    // A fixed window's denial waits until strictly after its reset: the reset's seconds rounded up, or
    // one more when the reset is a whole number of seconds away.
    else assert.ok([reset, reset + 1].includes(Number(got["retry-after"])), which);
  });
}

/** The real @upstash/redis on the gateway `make test` started. */
export function gatewayRedis() {
  return new Redis({ url: process.env.EDGELIMIT_TEST_URL, token: process.env.EDGELIMIT_TEST_TOKEN, enableTelemetry: false });
}

/**
 * Asserts the keys `id` left under the default prefix: the fixed window's counter at 6 (the first
 * refusal is counted too, as @upstash/ratelimit counts it; the ephemeral cache answers the two after
 * it without a request), or no key at all for an in-memory limit.
 */
export async function assertRedisKeys(id, { stored }) {
  const redis = gatewayRedis();
  const keys = await redis.keys(`@upstash/ratelimit:${id}:*`);
  if (!stored) {
    assert.deepEqual(keys, [], `${id}: an in-memory limit writes nothing to Redis`);
    return;
  }
  const window = Math.floor(Date.now() / (DAY_SECONDS * 1000));
  assert.deepEqual(keys, [`@upstash/ratelimit:${id}:${window}`], `${id}: one counter, today's`);
  assert.equal(await redis.get(keys[0]), 6, `${id}: 6 requests reached Redis`);
}
