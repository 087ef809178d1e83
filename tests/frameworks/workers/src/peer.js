// The control: @upstash/ratelimit in the same Worker, with the headers written from its answer.
import { Ratelimit } from "@upstash/ratelimit";
import { Redis } from "@upstash/redis/cloudflare";

// As @upstash/ratelimit's documentation has it for Workers: a limiter per request, its cache kept.
const cache = new Map();

export default {
  async fetch(request, env, ctx) {
    const ratelimit = new Ratelimit({ redis: Redis.fromEnv(env), limiter: Ratelimit.fixedWindow(5, "1 d"), ephemeralCache: cache, analytics: false });
    const result = await ratelimit.limit(request.headers.get("cf-connecting-ip") ?? "anonymous");
    ctx.waitUntil(result.pending);
    const headers = {
      "RateLimit-Limit": String(result.limit),
      "RateLimit-Remaining": String(result.remaining),
      "RateLimit-Reset": String(Math.max(0, Math.ceil((result.reset - Date.now()) / 1000))),
    };
    return new Response(result.success ? "ok" : "slow down", { status: result.success ? 200 : 429, headers });
  },
};
