// The package on a Redis Cluster (tests/js/cluster.mjs: six redis-servers behind the gateway's
// `--redis-cluster`): with `keys: "cluster"` every algorithm admits exactly its limit under concurrent
// calls and identifiers spread over the masters; without it, the cluster's CROSSSLOT refusal rejects
// the call with a message naming the option, whatever the fail mode; a bad `keys`, or one that cannot
// go with the keys every identifier shares, throws.
//
//   bash scripts/with_gateway.sh node --test tests/js/cluster.test.mjs
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { Ratelimit, Redis } from "./edgelimit.mjs";
import { importMultiRegionPackage } from "../../scripts/link_pkg.mjs";
import { startCluster } from "./cluster.mjs";

const multiRegion = await importMultiRegionPackage();

const noGateway = !process.env.EDGELIMIT_GATEWAY_BIN && "EDGELIMIT_GATEWAY_BIN is not set (run under scripts/with_gateway.sh)";

/** A fresh prefix per test, so tests never share keys. */
const prefix = () => `cluster-js-${Date.now()}-${Math.random().toString(36).slice(2)}`;

const CALLERS = 64;
const LIMIT = 10;

/** One limiter of each algorithm, `LIMIT` an hour. */
const limiters = (Class) => ({
  fixedWindow: Class.fixedWindow(LIMIT, "1 h"),
  slidingWindow: Class.slidingWindow(LIMIT, "1 h"),
  tokenBucket: Class.tokenBucket(1, "1 h", LIMIT),
  gcra: Class.gcra(LIMIT, "1 h"),
});

let cluster;
before(async () => {
  if (!noGateway) cluster = await startCluster();
});
after(async () => {
  await cluster?.close();
});

/** How many of `CALLERS` concurrent calls of `call` were admitted; every answer came from Redis. */
async function admitted(call) {
  const answers = await Promise.all(Array.from({ length: CALLERS }, call));
  for (const answer of answers) assert.equal(answer.reason, undefined, JSON.stringify(answer));
  await Promise.all(answers.map((answer) => answer.pending));
  return answers.filter((answer) => answer.success).length;
}

test("a bad `keys` throws, naming the option and the value", () => {
  const limiter = Ratelimit.fixedWindow(1, "1 s");
  assert.throws(() => new Ratelimit({ limiter, keys: "clustered" }), (error) => {
    assert.ok(error instanceof RangeError, error.message);
    assert.ok(error.message.includes("`keys`") && error.message.includes('"clustered"'), error.message);
    assert.ok(error.message.includes('"upstash" or "cluster"'), error.message);
    return true;
  });
  assert.throws(() => new Ratelimit({ limiter, keys: 1 }), TypeError);
  assert.throws(() => new multiRegion.MultiRegionRatelimit({ redis: [{ url: "http://127.0.0.1:9", token: "t" }], limiter: multiRegion.Ratelimit.fixedWindow(1, "1 s"), keys: "Cluster" }), RangeError);
  assert.throws(() => new Ratelimit({ limiter, key: "cluster" }), /did you mean `keys`\?/);
  // Both values are accepted.
  new Ratelimit({ limiter, keys: "upstash" });
  new Ratelimit({ limiter, keys: "cluster" });
});

test("`keys: \"cluster\"` refuses the keys every identifier shares", () => {
  const redis = new Redis({ url: "http://127.0.0.1:9", token: "t" });
  const limiter = Ratelimit.fixedWindow(1, "1 s");
  for (const [option, key] of [["dynamicLimits", "dynamic limit"], ["enableProtection", "deny list"], ["analytics", "analytics events"]]) {
    assert.throws(() => new Ratelimit({ redis, limiter, keys: "cluster", [option]: true }), (error) => {
      assert.ok(error instanceof TypeError, error.message);
      assert.ok(error.message.includes(`\`keys\` cannot go with \`${option}\` yet: the ${key}`), error.message);
      assert.ok(error.message.includes('got "cluster"'), error.message);
      return true;
    });
    new Ratelimit({ redis, limiter, keys: "upstash", [option]: true });
  }
  assert.throws(
    () => new multiRegion.MultiRegionRatelimit({ redis: [{ url: "http://127.0.0.1:9", token: "t" }], limiter: multiRegion.Ratelimit.fixedWindow(1, "1 s"), keys: "cluster", dynamicLimits: true }),
    /`keys` cannot go with `dynamicLimits` yet/,
  );
});

test("with `keys: \"cluster\"`, every algorithm admits exactly its limit, over every master", { skip: noGateway }, async () => {
  const redis = new Redis({ url: cluster.url, token: cluster.token });
  const ids = ["a", "b", "c", "d", "e", "f"];
  for (const [name, limiter] of Object.entries(limiters(Ratelimit))) {
    const ratelimit = new Ratelimit({ redis, limiter, prefix: prefix(), keys: "cluster", ephemeralCache: false });
    // One peek per identifier, one after the other, loads the script on each master: the first calls'
    // EVALs, coalesced, would otherwise carry every caller's copy of the script in one request, past
    // the gateway's 1 MiB body limit (the fail mode would answer them).
    for (const id of ids) assert.equal((await ratelimit.limit(`user:${id}`, { rate: 0 })).reason, undefined);
    const counts = await Promise.all(ids.map((id) => admitted(() => ratelimit.limit(`user:${id}`))));
    assert.deepEqual(counts, Array(ids.length).fill(LIMIT), name);
    assert.equal((await ratelimit.getRemaining("user:a")).remaining, 0, name);
    await ratelimit.resetUsedTokens("user:a");
    assert.equal((await ratelimit.getRemaining("user:a")).remaining, LIMIT, `${name} after a reset`);
  }
  const sizes = await Promise.all((await cluster.masters()).map((port) => cluster.dbsize(port)));
  assert.equal(sizes.length, 3);
  assert.ok(sizes.every((keys) => keys > 0), `keys per master: ${sizes}`);
});

test("MultiRegionRatelimit with `keys: \"cluster\"` admits exactly its limit", { skip: noGateway }, async () => {
  const { MultiRegionRatelimit, Ratelimit: Class } = multiRegion;
  for (const [name, limiter] of Object.entries(limiters(Class))) {
    const ratelimit = new MultiRegionRatelimit({ redis: [{ url: cluster.url, token: cluster.token }], limiter, prefix: prefix(), keys: "cluster", ephemeralCache: false });
    assert.equal(await admitted(() => ratelimit.limit("user:a")), LIMIT, name);
  }
});

test("without `keys: \"cluster\"`, the CROSSSLOT refusal rejects naming the option, whatever the fail mode", { skip: noGateway }, async () => {
  const redis = new Redis({ url: cluster.url, token: cluster.token });
  for (const failMode of ["open", "closed"]) {
    const ratelimit = new Ratelimit({ redis, limiter: Ratelimit.slidingWindow(LIMIT, "1 h"), prefix: prefix(), failMode });
    await assert.rejects(ratelimit.limit("user:a"), (error) => {
      assert.ok(error.message.includes("CROSSSLOT"), error.message);
      assert.ok(error.message.includes('keys: "cluster"'), error.message);
      return true;
    });
  }
});
