import { Ratelimit, rateLimitHeaders } from "edgelimit";

// No `redis`: the limit is kept in this process's memory.
const ratelimit = new Ratelimit({ limiter: Ratelimit.fixedWindow(5, "1 d") });

export default {
  async fetch(request, server) {
    const ip = request.headers.get("x-forwarded-for") ?? server.requestIP(request)?.address ?? "anonymous";
    const result = await ratelimit.limit(ip);
    const headers = rateLimitHeaders(result);
    return new Response(result.success ? "ok" : "slow down", { status: result.success ? 200 : 429, headers });
  },
};
