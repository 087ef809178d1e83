import { Ratelimit, rateLimitHeaders } from "edgelimit";

// No `redis`: the limit is kept in this isolate's memory.
const ratelimit = new Ratelimit({ limiter: Ratelimit.fixedWindow(5, "1 d") });

export async function GET({ getClientAddress }) {
  const result = await ratelimit.limit(getClientAddress());
  const headers = rateLimitHeaders(result);
  return new Response(result.success ? "ok" : "slow down", { status: result.success ? 200 : 429, headers });
}
