import { Ratelimit, Redis, rateLimitHeaders } from "edgelimit";

// Made on the first request, when `env` is known, and kept by the isolate (with its ephemeral cache).
let ratelimit;

export default {
  async fetch(request, env, ctx) {
    ratelimit ??= new Ratelimit({ redis: Redis.fromEnv(env), limiter: Ratelimit.fixedWindow(5, "1 d") });
    const result = await ratelimit.limit(request.headers.get("cf-connecting-ip") ?? "anonymous");
    ctx.waitUntil(result.pending);
    const headers = rateLimitHeaders(result);
    return new Response(result.success ? "ok" : "slow down", { status: result.success ? 200 : 429, headers });
  },
};
