import { Hono } from "hono";
import { Ratelimit, Redis, rateLimitHeaders } from "edgelimit";

const app = new Hono();
let ratelimit;

app.use("/limited/*", async (c, next) => {
  ratelimit ??= new Ratelimit({ redis: Redis.fromEnv(c.env), limiter: Ratelimit.fixedWindow(5, "1 d") });
  const result = await ratelimit.limit(c.req.header("cf-connecting-ip") ?? "anonymous");
  c.executionCtx.waitUntil(result.pending);
  for (const [name, value] of Object.entries(rateLimitHeaders(result))) c.header(name, value);
  if (!result.success) return c.text("slow down", 429);
  await next();
});

app.get("/limited/hello", (c) => c.text("ok"));

export default app;
