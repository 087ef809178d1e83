// The control: @upstash/ratelimit in the same endpoint, with the headers written from its answer.
import { Ratelimit } from "@upstash/ratelimit";
import { Redis } from "@upstash/redis/cloudflare";

const cache = new Map();

export async function GET({ platform, getClientAddress }) {
  const ratelimit = new Ratelimit({ redis: Redis.fromEnv(platform.env), limiter: Ratelimit.fixedWindow(5, "1 d"), ephemeralCache: cache, analytics: false });
  const result = await ratelimit.limit(getClientAddress());
  platform.ctx.waitUntil(result.pending);
  const headers = {
    "RateLimit-Limit": String(result.limit),
    "RateLimit-Remaining": String(result.remaining),
    "RateLimit-Reset": String(Math.max(0, Math.ceil((result.reset - Date.now()) / 1000))),
  };
  return new Response(result.success ? "ok" : "slow down", { status: result.success ? 200 : 429, headers });
}
