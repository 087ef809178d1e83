import { after } from "next/server";
import { Ratelimit, Redis, rateLimitHeaders } from "edgelimit";

export const runtime = "edge";

const ratelimit = new Ratelimit({ redis: Redis.fromEnv(), limiter: Ratelimit.fixedWindow(5, "1 d") });

export async function GET(request: Request) {
  const result = await ratelimit.limit(request.headers.get("x-forwarded-for") ?? "anonymous");
  after(result.pending);
  const headers = rateLimitHeaders(result);
  return new Response(result.success ? "ok" : "slow down", { status: result.success ? 200 : 429, headers });
}
