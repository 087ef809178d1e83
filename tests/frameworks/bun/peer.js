// The control: @upstash/ratelimit in the same server, with the headers written from its answer.
import { Ratelimit } from "@upstash/ratelimit";
import { Redis } from "@upstash/redis";

const ratelimit = new Ratelimit({ redis: Redis.fromEnv(), limiter: Ratelimit.fixedWindow(5, "1 d"), analytics: false });

export default {
  async fetch(request, server) {
    const ip = request.headers.get("x-forwarded-for") ?? server.requestIP(request)?.address ?? "anonymous";
    const result = await ratelimit.limit(ip);
    const headers = {
      "RateLimit-Limit": String(result.limit),
      "RateLimit-Remaining": String(result.remaining),
      "RateLimit-Reset": String(Math.max(0, Math.ceil((result.reset - Date.now()) / 1000))),
    };
    return new Response(result.success ? "ok" : "slow down", { status: result.success ? 200 : 429, headers });
  },
};
