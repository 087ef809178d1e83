import { Ratelimit, rateLimitHeaders } from "edgelimit";

// No `redis`: the limit is kept in this isolate's memory, so the limiter outlives the request.
const ratelimit = new Ratelimit({ limiter: Ratelimit.fixedWindow(5, "1 d") });

export default {
  async fetch(request, env, ctx) {
    const result = await ratelimit.limit(request.headers.get("cf-connecting-ip") ?? "anonymous");
    ctx.waitUntil(result.pending);
    const headers = rateLimitHeaders(result);
    return new Response(result.success ? "ok" : "slow down", { status: result.success ? 200 : 429, headers });
  },
};
