import { NextResponse, type NextFetchEvent, type NextRequest } from "next/server";
import { Ratelimit, Redis, rateLimitHeaders } from "edgelimit";

const ratelimit = new Ratelimit({ redis: Redis.fromEnv(), limiter: Ratelimit.fixedWindow(5, "1 d") });

export async function middleware(request: NextRequest, event: NextFetchEvent) {
  const result = await ratelimit.limit(request.headers.get("x-forwarded-for") ?? "anonymous");
  event.waitUntil(result.pending);
  const headers = rateLimitHeaders(result);
  if (!result.success) return new NextResponse("slow down", { status: 429, headers });
  const response = NextResponse.next();
  for (const [name, value] of Object.entries(headers)) response.headers.set(name, value);
  return response;
}

export const config = { matcher: "/guarded" };
