// The control: @upstash/ratelimit as the same middleware, with the headers written from its answer.
import { Hono } from "hono";
import { Ratelimit } from "@upstash/ratelimit";
import { Redis } from "@upstash/redis/cloudflare";

const app = new Hono();
const cache = new Map();

app.use("/limited/*", async (c, next) => {
  const ratelimit = new Ratelimit({ redis: Redis.fromEnv(c.env), limiter: Ratelimit.fixedWindow(5, "1 d"), ephemeralCache: cache, analytics: false });
  const result = await ratelimit.limit(c.req.header("cf-connecting-ip") ?? "anonymous");
  c.executionCtx.waitUntil(result.pending);
  c.header("RateLimit-Limit", String(result.limit));
  c.header("RateLimit-Remaining", String(result.remaining));
  c.header("RateLimit-Reset", String(Math.max(0, Math.ceil((result.reset - Date.now()) / 1000))));
  if (!result.success) return c.text("slow down", 429);
  await next();
});

app.get("/limited/hello", (c) => c.text("ok"));

export default app;
