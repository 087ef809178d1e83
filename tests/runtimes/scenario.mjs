// The decisions every runtime of tests/js/runtimes.test.mjs makes against the gateway, with the package
// that runtime imported. Plain JavaScript with no imports, so a browser, workerd, Deno, Vercel's
// edge-runtime and Node all run this same file; the test asserts the JSON it returns and the keys it
// left in Redis and in each region.
//
// Windows are a day long: a run fails only if its calls span midnight UTC, where with 10 s windows about
// one run in a few hundred would straddle a boundary.

/** What the runtime says it is, so the test can tell that the intended runtime answered. */
function runtimeName() {
  if (typeof EdgeRuntime === "string") return `edge-runtime (${EdgeRuntime})`;
  if (globalThis.navigator?.userAgent) return globalThis.navigator.userAgent;
  // Node 20 has no navigator.
  return globalThis.process?.versions?.node ? `Node.js/${process.versions.node}` : "unknown";
}

/** A decision without `pending`, after handing `pending` to `waitUntil`. */
async function decide(ratelimit, identifier, waitUntil) {
  const { success, limit, remaining, reset, reason, pending } = await ratelimit.limit(identifier);
  const pendingIsPromise = Object.prototype.toString.call(pending) === "[object Promise]";
  await waitUntil(pending);
  return { success, limit, remaining, reset, reason: reason ?? null, pendingIsPromise };
}

/**
 * Runs the scenario with `edgelimit` (the package's exports) against `url`/`token`, with keys under
 * `prefix`, and one decision of `MultiRegionRatelimit` over `regions` (`{ url, tokens }`: one gateway,
 * a token per region). `waitUntil` receives each `pending` (a Worker's `ctx.waitUntil`); by default it
 * is awaited.
 */
export async function scenario({ MultiRegionRatelimit, Ratelimit, Redis }, { url, token, prefix, regions }, waitUntil = (pending) => pending) {
  const redis = new Redis({ url, token });
  const make = (name, limiter) => new Ratelimit({ redis, limiter, prefix: `${prefix}:${name}` });

  // The default ephemeral cache answers the fifth call: denied fourth, the identifier is blocked locally.
  const fixed = make("fixed", Ratelimit.fixedWindow(3, "1 d"));
  const fixedWindow = [];
  for (let i = 0; i < 5; i++) fixedWindow.push(await decide(fixed, "user", waitUntil));
  const { remaining, limit } = await fixed.getRemaining("user");

  const others = {
    slidingWindow: make("sliding", Ratelimit.slidingWindow(2, "1 d")),
    tokenBucket: make("bucket", Ratelimit.tokenBucket(1, "1 h", 2)),
    gcra: make("gcra", Ratelimit.gcra(2, "1 h")),
    // The second call is answered locally; its Redis write travels in `pending`, through waitUntil.
    cachedFixedWindow: make("cached", Ratelimit.cachedFixedWindow(2, "1 d")),
  };
  const result = { runtime: runtimeName(), fixedWindow, getRemaining: { remaining, limit } };
  for (const [name, ratelimit] of Object.entries(others)) {
    result[name] = [];
    for (let i = 0; i < 3; i++) result[name].push(await decide(ratelimit, "user", waitUntil));
  }

  // Two limits decided all or nothing: the second call, denied by the first limit, is counted by neither.
  const set = new Ratelimit({
    redis,
    prefix: `${prefix}:set`,
    limiter: [Ratelimit.slidingWindow(1, "1 d"), { limiter: Ratelimit.fixedWindow(5, "1 d"), prefix: `${prefix}:quota` }],
    ephemeralCache: false,
  });
  result.set = [];
  for (let i = 0; i < 2; i++) {
    const answer = await set.limit("user");
    await waitUntil(answer.pending);
    const limits = answer.limits.map(({ success, limit, remaining }) => ({ success, limit, remaining }));
    result.set.push({ success: answer.success, limit: answer.limit, remaining: answer.remaining, limits });
  }
  // A dry run decides and counts as live, admits, and says what live would have answered.
  const dry = new Ratelimit({ redis, prefix: `${prefix}:dry`, limiter: Ratelimit.fixedWindow(1, "1 d"), dryRun: true, ephemeralCache: false });
  result.dryRun = [];
  for (let i = 0; i < 2; i++) {
    const { success, reason, live, pending } = await dry.limit("user");
    await waitUntil(pending);
    result.dryRun.push({ success, reason: reason ?? null, live: { success: live.success, remaining: live.remaining } });
  }

  // Every region is asked; the first to reply answers, and `pending` merges the request into the others.
  const multiRegion = new MultiRegionRatelimit({
    redis: regions.tokens.map((regionToken) => new Redis({ url: regions.url, token: regionToken })),
    limiter: MultiRegionRatelimit.fixedWindow(3, "1 d"),
    prefix: `${prefix}:regions`,
  });
  result.multiRegion = await decide(multiRegion, "user", waitUntil);
  return result;
}
