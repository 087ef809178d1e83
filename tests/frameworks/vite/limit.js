import { Ratelimit, rateLimitHeaders } from "edgelimit";

// In the browser, without `redis`: the limit is kept in this tab, no server asked.
const ratelimit = new Ratelimit({ limiter: Ratelimit.fixedWindow(5, "1 d") });

/** Whether `user` may try once more today, and the RateLimit headers that say how often. */
export async function tryOnce(user) {
  const result = await ratelimit.limit(user);
  return { allowed: result.success, headers: rateLimitHeaders(result) };
}
