// @upstash/ratelimit 2.2.0 (single region, all four algorithms) against the gateway.
import { Redis } from "@upstash/redis";
import { Ratelimit } from "@upstash/ratelimit";
import { check, commandStats, env, finish, resetStats } from "./helpers.mjs";

const redis = new Redis({ url: env("GATEWAY_URL"), token: env("GATEWAY_TOKEN"), retry: false });
const redisPort = env("REDIS_PORT");
const run = Date.now();

const limiters = {
  fixedWindow: new Ratelimit({ redis, limiter: Ratelimit.fixedWindow(5, "60 s"), prefix: `fw${run}` }),
  slidingWindow: new Ratelimit({ redis, limiter: Ratelimit.slidingWindow(5, "60 s"), prefix: `sw${run}` }),
  tokenBucket: new Ratelimit({ redis, limiter: Ratelimit.tokenBucket(1, "60 s", 5), prefix: `tb${run}` }),
  cachedFixedWindow: new Ratelimit({
    redis,
    limiter: Ratelimit.cachedFixedWindow(5, "60 s"),
    prefix: `cf${run}`,
    ephemeralCache: new Map(),
  }),
};

async function decisions(limiter, id, n) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const r = await limiter.limit(id);
    await r.pending;
    out.push(r);
  }
  return out;
}

// Warm-up: the first calls load the scripts (EVALSHA -> NOSCRIPT -> EVAL).
for (const [name, limiter] of Object.entries(limiters)) {
  const rs = await decisions(limiter, "warm", 7);
  const ok = rs.map((r) => r.success);
  check(`${name} allows 5 then denies`, JSON.stringify(ok) === JSON.stringify([true, true, true, true, true, false, false]), JSON.stringify(ok));
  check(`${name} remaining counts down`, rs[0].remaining === 4 && rs[4].remaining === 0, rs.map((r) => r.remaining).join(","));
  check(`${name} limit`, rs.every((r) => r.limit === 5));
}

// After warm-up every Redis call is one EVALSHA hit: no NOSCRIPT, no EVAL.
await resetStats(redisPort);
let expectedRedisCalls = 0;
for (const [name, limiter] of Object.entries(limiters)) {
  for (let i = 0; i < 3; i++) {
    const rs = await decisions(limiter, `hot${i}`, 2);
    check(`${name} hot ${i}`, rs.every((r) => r.success));
  }
  expectedRedisCalls += 6;
}
const stats = await commandStats(redisPort);
const evalsha = stats.evalsha ?? { calls: 0, failed: 0, rejected: 0 };
check("no EVAL after warm-up", !stats.eval, JSON.stringify(stats));
check("no NOSCRIPT after warm-up", evalsha.failed === 0 && evalsha.rejected === 0, JSON.stringify(evalsha));
check("one EVALSHA per call", evalsha.calls === expectedRedisCalls, `${evalsha.calls} != ${expectedRedisCalls}`);
// (Commands called inside the scripts, e.g. incrby or hset, are counted too, so only
// script-level commands are checked here.)
check("no SCRIPT LOAD after warm-up", !stats["script|load"], JSON.stringify(stats));

finish();
