// MultiRegionRatelimit of the package (pkg/, imported by its bare name) over real regions: separate
// redis-servers behind one gateway (scripts/regions.mjs), beside @upstash/ratelimit 2.2.0's class of the
// same name.
//
//   bash scripts/with_gateway.sh node --test tests/js/multi_region.test.mjs
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { MultiRegionRatelimit as PeerMultiRegionRatelimit } from "@upstash/ratelimit";
import { Redis as PeerRedis } from "@upstash/redis";
import { startRegions, until } from "../../scripts/regions.mjs";
import { MultiRegionRatelimit, Ratelimit, Redis } from "./edgelimit.mjs";

const noGateway = !process.env.EDGELIMIT_GATEWAY_BIN && "EDGELIMIT_GATEWAY_BIN is not set (run under scripts/with_gateway.sh)";

/** A fresh prefix per test, so tests never share keys. */
const prefix = () => `mr-js-${Date.now()}-${Math.random().toString(36).slice(2)}`;

let regions;
before(async () => {
  if (!noGateway) regions = await startRegions(3);
});
after(async () => {
  await regions?.close();
});

/** One command in region `i`, through the gateway. */
async function command(i, ...args) {
  const reply = await fetch(`${regions.url}/pipeline`, {
    method: "POST",
    headers: { Authorization: `Bearer ${regions.tokens[i]}` },
    body: JSON.stringify([args]),
  });
  const [{ result, error }] = await reply.json();
  if (error) throw new Error(error);
  return result;
}

/** Every hash under `pattern` in region `i`: key -> { id: cost }. */
async function hashes(i, pattern) {
  const state = {};
  for (const key of (await command(i, "KEYS", pattern)).sort()) {
    const fields = await command(i, "HGETALL", key);
    const hash = {};
    for (let f = 0; f < fields.length; f += 2) hash[fields[f]] = fields[f + 1];
    state[key] = Object.fromEntries(Object.entries(hash).sort());
  }
  return state;
}

/** Asserts that regions `indices` hold the same hashes under `pattern`; returns them. */
async function converged(pattern, indices = [0, 1, 2]) {
  const states = await Promise.all(indices.map((i) => hashes(i, pattern)));
  for (const [n, state] of states.entries()) assert.deepEqual(state, states[0], `region ${indices[n]} differs`);
  return states[0];
}

const sum = (hash) => Object.values(hash).reduce((total, cost) => total + Number(cost), 0);

/** Our regions, each with an optional custom `fetch`. */
const ours = (fetches = []) => regions.tokens.map((token, i) => new Redis({ url: regions.url, token, fetch: fetches[i] }));

test("after pending every region holds the same ids, each with its own cost", { skip: noGateway }, async () => {
  for (const limiter of [MultiRegionRatelimit.fixedWindow(40, "1 h"), MultiRegionRatelimit.slidingWindow(40, "1 h"), Ratelimit.tokenBucket(1, "1 h", 40), Ratelimit.gcra(40, "1 h")]) {
    const p = prefix();
    const clients = [0, 1, 2].map(() => new MultiRegionRatelimit({ redis: ours(), limiter, prefix: p, ephemeralCache: false }));
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, n) => clients[n % 3].limit("u", { rate: 1 + (n % 2) })),
    );
    await Promise.all(answers.map((answer) => answer.pending));
    for (const answer of answers) assert.ok(answer.remaining >= 0, JSON.stringify(answer));
    const state = await converged(`${p}:u:*`);
    const [hash] = Object.values(state);
    const admitted = answers.reduce((total, answer, n) => total + (answer.success ? 1 + (n % 2) : 0), 0);
    assert.ok(sum(hash) >= admitted, `${sum(hash)} recorded, ${admitted} admitted`);
    assert.ok(sum(hash) <= 40 * 3, "no region admits past the limit on what it holds");
    for (const cost of Object.values(hash)) assert.ok(["1", "2"].includes(cost), `own cost, got ${cost}`);
  }
});

test("a fleet mixing the peer's MultiRegionRatelimit and edgelimit's admits exactly the limit", { skip: noGateway }, async () => {
  const peerRedis = regions.tokens.map((token) => new PeerRedis({ url: regions.url, token, enableTelemetry: false }));
  for (const name of ["fixedWindow", "slidingWindow"]) {
    const p = prefix();
    const peer = new PeerMultiRegionRatelimit({ redis: peerRedis, limiter: PeerMultiRegionRatelimit[name](10, "1 h"), prefix: p });
    const edgelimit = new MultiRegionRatelimit({ redis: ours(), limiter: MultiRegionRatelimit[name](10, "1 h"), prefix: p, ephemeralCache: false });
    let admitted = 0;
    for (let n = 0; n < 20; n++) {
      const answer = await (n % 2 ? peer : edgelimit).limit("u");
      await answer.pending;
      if (answer.success) admitted += 1;
    }
    assert.equal(admitted, 10, name);
    const remaining = await edgelimit.getRemaining("u");
    assert.equal(remaining.remaining, 0, name);
  }
});

test("a stopped region and a slowed one delay neither the answer nor the others' merge", { skip: noGateway }, async () => {
  const p = prefix();
  const limiter = MultiRegionRatelimit.slidingWindow(100, "1 h");
  const window = Math.floor(Date.now() / 3_600_000);
  const key = `${p}:u:${window}`;
  // Region 1 is slowed: its requests wait for a gate the test opens.
  let open;
  const gate = new Promise((resolve) => (open = resolve));
  let slowReplied = false;
  const slow = async (url, init) => {
    await gate;
    const reply = await fetch(url, init);
    slowReplied = true;
    return reply;
  };
  await command(0, "HSET", key, "seeded-0", "2");
  await command(2, "HSET", key, "seeded-2", "3");
  await regions.stop(2);
  try {
    const limit = new MultiRegionRatelimit({ redis: ours([undefined, slow]), limiter, prefix: p, timeout: 0 });
    const answer = await limit.limit("u");
    assert.equal(answer.success, true);
    assert.equal(answer.reason, undefined);
    assert.equal(slowReplied, false, "the answer came before the slowed region replied");
    let settled = false;
    answer.pending.then(() => (settled = true));
    // The slowed region has not replied: the pending merge still waits for it, nobody else does.
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(settled, false);
    open();
    await answer.pending;
    assert.ok(slowReplied);
    const state = await converged(`${p}:u:*`, [0, 1]);
    assert.deepEqual(Object.keys(state[key]).filter((id) => id.startsWith("seeded")), ["seeded-0"]);
    assert.equal(Object.keys(state[key]).length, 2, "seeded-0 and the request");
  } finally {
    open();
    await regions.restart(2);
  }
  // Region 2 came back empty (no persistence); the next request's merge gives it the union.
  const limit = new MultiRegionRatelimit({ redis: ours(), limiter, prefix: p });
  const answer = await limit.limit("u");
  await answer.pending;
  const state = await converged(`${p}:u:*`);
  assert.equal(Object.keys(state[key]).length, 3);
});

test("a slowed region does not hold up the merge of the others", { skip: noGateway }, async () => {
  const p = prefix();
  const limiter = MultiRegionRatelimit.fixedWindow(100, "1 h");
  const key = `${p}:u:${Math.floor(Date.now() / 3_600_000)}`;
  await command(0, "HSET", key, "seeded-0", "1");
  await command(2, "HSET", key, "seeded-2", "1");
  let open;
  const gate = new Promise((resolve) => (open = resolve));
  const slow = async (url, init) => {
    await gate;
    return fetch(url, init);
  };
  const limit = new MultiRegionRatelimit({ redis: ours([undefined, slow]), limiter, prefix: p, timeout: 0 });
  const answer = await limit.limit("u");
  await until("regions 0 and 2 merged while region 1 is held", async () => {
    const [zero, two] = await Promise.all([hashes(0, key), hashes(2, key)]);
    return Object.keys(zero[key] ?? {}).length === 3 && Object.keys(two[key] ?? {}).length === 3;
  });
  open();
  await answer.pending;
  await converged(`${p}:u:*`);
});

test("with every region failing the fail mode answers with a reason, and pending resolves", { skip: noGateway }, async () => {
  const failing = async () => {
    throw new TypeError("fetch failed");
  };
  for (const failMode of ["open", "closed"]) {
    const limit = new MultiRegionRatelimit({
      redis: ours([failing, failing, failing]),
      limiter: MultiRegionRatelimit.fixedWindow(5, "1 m"),
      failMode,
      prefix: prefix(),
    });
    const answer = await limit.limit("u");
    assert.deepEqual([answer.success, answer.reason], [failMode === "open", "error"]);
    assert.equal(await answer.pending, undefined);
    await assert.rejects(limit.getRemaining("u"), Error);
    await assert.rejects(limit.resetUsedTokens("u"), Error);
  }
});

test("resetUsedTokens awaits every region; ephemeralCache: false is honoured; dynamic limits", { skip: noGateway }, async () => {
  const p = prefix();
  const make = (ephemeralCache) =>
    new MultiRegionRatelimit({ redis: ours(), limiter: MultiRegionRatelimit.slidingWindow(2, "1 h"), prefix: p, ephemeralCache, dynamicLimits: true });
  const cached = make(true);
  for (let n = 0; n < 2; n++) await (await cached.limit("u")).pending;
  const third = await cached.limit("u");
  assert.equal(third.success, false);
  assert.equal((await cached.limit("u")).reason, "cacheBlock");
  const uncached = make(false);
  const denied = await uncached.limit("u");
  assert.deepEqual([denied.success, denied.reason, denied.remaining], [false, undefined, 0]);

  // A merge still running could write back what a reset deletes (a union has no removal): reset once
  // the merges have settled.
  await Promise.all([third.pending, denied.pending]);
  await uncached.resetUsedTokens("u");
  for (const i of [0, 1, 2]) assert.deepEqual(await command(i, "KEYS", `${p}:u:*`), [], `region ${i}`);
  assert.equal((await uncached.limit("u")).success, true);

  await uncached.setDynamicLimit({ limit: 7 });
  for (const i of [0, 1, 2]) assert.equal(await command(i, "GET", `${p}:dynamic:global`), "7");
  assert.deepEqual(await uncached.getDynamicLimit(), { dynamicLimit: 7 });
  assert.equal((await uncached.limit("u")).limit, 7);
  await uncached.setDynamicLimit({ limit: false });
  assert.deepEqual(await uncached.getDynamicLimit(), { dynamicLimit: null });
  const ready = await uncached.blockUntilReady("v", 1000);
  assert.equal(ready.success, true);
  await ready.pending;
});

test("bad redis and limiter options are TypeErrors naming them", () => {
  const limiter = MultiRegionRatelimit.fixedWindow(5, "1 m");
  const redis = new Redis({ url: "http://127.0.0.1:1", token: "t" });
  const throwsNaming = (config, pattern) => assert.throws(() => new MultiRegionRatelimit(config), (error) => error instanceof TypeError && pattern.test(error.message), String(pattern));
  throwsNaming({ redis: [], limiter }, /`redis` must be a non-empty array/);
  throwsNaming({ redis, limiter }, /`redis` must be a non-empty array/);
  throwsNaming({ limiter }, /`redis` must be a non-empty array/);
  throwsNaming({ redis: [redis, 5], limiter }, /`redis\[1\]` must be a Redis or a \{ url, token \} object, got 5/);
  throwsNaming({ redis: [redis, { url: "http://x" }], limiter }, /\(redis\[1\]\): `token` must be a string/);
  throwsNaming({ redis: [redis], limiter: Ratelimit.cachedFixedWindow(5, "1 s") }, /`limiter` must not be a cachedFixedWindow/);
  throwsNaming({ redis: [redis], limiter: { algorithm: "leakyBucket" } }, /`limiter` must be a limiter/);
  assert.ok(new MultiRegionRatelimit({ redis: [redis, { url: "https://x", token: "t" }], limiter: Ratelimit.slidingWindow(5, "1 s") }));
});
