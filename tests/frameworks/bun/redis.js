import { Ratelimit, Redis, rateLimitHeaders } from "edgelimit";

const ratelimit = new Ratelimit({ redis: Redis.fromEnv(), limiter: Ratelimit.fixedWindow(5, "1 d") });

export default {
  async fetch(request, server) {
    const ip = request.headers.get("x-forwarded-for") ?? server.requestIP(request)?.address ?? "anonymous";
    // A server process outlives the response: `pending` settles on its own.
    const result = await ratelimit.limit(ip);
    const headers = rateLimitHeaders(result);
    return new Response(result.success ? "ok" : "slow down", { status: result.success ? 200 : 429, headers });
  },
};
