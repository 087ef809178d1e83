import { Hono } from "hono";
import { Ratelimit, rateLimitHeaders } from "edgelimit";

// No `redis`: the limit is kept in this isolate's memory.
const ratelimit = new Ratelimit({ limiter: Ratelimit.fixedWindow(5, "1 d") });
const app = new Hono();

app.use("/limited/*", async (c, next) => {
  const result = await ratelimit.limit(c.req.header("cf-connecting-ip") ?? "anonymous");
  for (const [name, value] of Object.entries(rateLimitHeaders(result))) c.header(name, value);
  if (!result.success) return c.text("slow down", 429);
  await next();
});

app.get("/limited/hello", (c) => c.text("ok"));

export default app;
