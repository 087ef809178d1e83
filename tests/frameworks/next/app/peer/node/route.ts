// The control: @upstash/ratelimit in the same route, with the headers written from its answer.
import { after } from "next/server";
import { Ratelimit } from "@upstash/ratelimit";
import { Redis } from "@upstash/redis";

export const runtime = "nodejs";

const ratelimit = new Ratelimit({ redis: Redis.fromEnv(), limiter: Ratelimit.fixedWindow(5, "1 d"), analytics: false });

export async function GET(request: Request) {
  const result = await ratelimit.limit(request.headers.get("x-forwarded-for") ?? "anonymous");
  after(result.pending);
  const headers = {
    "RateLimit-Limit": String(result.limit),
    "RateLimit-Remaining": String(result.remaining),
    "RateLimit-Reset": String(Math.max(0, Math.ceil((result.reset - Date.now()) / 1000))),
  };
  return new Response(result.success ? "ok" : "slow down", { status: result.success ? 200 : 429, headers });
}
