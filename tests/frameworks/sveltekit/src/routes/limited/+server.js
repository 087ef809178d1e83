import { Ratelimit, Redis, rateLimitHeaders } from "edgelimit";

// Made on the first request, when the platform's `env` is known, and kept by the isolate.
let ratelimit;

export async function GET({ platform, getClientAddress }) {
  ratelimit ??= new Ratelimit({ redis: Redis.fromEnv(platform.env), limiter: Ratelimit.fixedWindow(5, "1 d") });
  const result = await ratelimit.limit(getClientAddress());
  platform.ctx.waitUntil(result.pending);
  const headers = rateLimitHeaders(result);
  return new Response(result.success ? "ok" : "slow down", { status: result.success ? 200 : 429, headers });
}
