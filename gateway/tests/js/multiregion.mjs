// @upstash/ratelimit 2.2.0 MultiRegionRatelimit over two tokens mapped to two Redis databases.
import { Redis } from "@upstash/redis";
import { MultiRegionRatelimit } from "@upstash/ratelimit";
import { check, env, finish } from "./helpers.mjs";

const url = env("GATEWAY_URL");
const regions = [
  new Redis({ url, token: env("REGION_A_TOKEN"), retry: false }),
  new Redis({ url, token: env("REGION_B_TOKEN"), retry: false }),
];
const run = Date.now();

for (const [name, limiter] of [
  ["fixedWindow", MultiRegionRatelimit.fixedWindow(5, "60 s")],
  ["slidingWindow", MultiRegionRatelimit.slidingWindow(5, "60 s")],
]) {
  const rl = new MultiRegionRatelimit({ redis: regions, limiter, prefix: `mr${name}${run}`, ephemeralCache: false });
  const ok = [];
  for (let i = 0; i < 7; i++) {
    const r = await rl.limit("user");
    await r.pending;
    ok.push(r.success);
  }
  check(`multi-region ${name} allows 5 then denies`, JSON.stringify(ok) === JSON.stringify([true, true, true, true, true, false, false]), JSON.stringify(ok));
  // Both regions hold the synced state.
  const keys = await Promise.all(regions.map((r) => r.keys(`mr${name}${run}:*`)));
  check(`multi-region ${name} state in both regions`, keys.every((k) => k.length >= 1), JSON.stringify(keys));
}

finish();
