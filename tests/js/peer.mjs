// The real @upstash/ratelimit as a peer process for Rust interop tests: one JSON request per stdin
// line ({ op: "limit" | "getRemaining", algorithm, id, rate? }), one JSON reply per stdout line.
import { Ratelimit } from "@upstash/ratelimit";
import { Redis } from "@upstash/redis";
import { createInterface } from "node:readline";

const redis = new Redis({
  url: process.env.EDGELIMIT_TEST_URL,
  token: process.env.EDGELIMIT_TEST_TOKEN,
  enableTelemetry: false,
});
const limiters = {
  fixedWindow: Ratelimit.fixedWindow(10, "1 h"),
  slidingWindow: Ratelimit.slidingWindow(10, "1 h"),
  tokenBucket: Ratelimit.tokenBucket(1, "1 h", 10),
};
const ratelimits = Object.fromEntries(
  Object.entries(limiters).map(([name, limiter]) => [
    name,
    new Ratelimit({ redis, limiter, ephemeralCache: false, analytics: false }),
  ]),
);

for await (const line of createInterface({ input: process.stdin })) {
  let reply;
  try {
    const { op, algorithm, id, rate } = JSON.parse(line);
    const ratelimit = ratelimits[algorithm];
    if (op === "limit") {
      const { success, limit, remaining, reset, pending } = await ratelimit.limit(id, { rate });
      await pending;
      reply = { success, limit, remaining, reset };
    } else {
      reply = await ratelimit.getRemaining(id);
    }
  } catch (error) {
    reply = { error: String(error?.stack ?? error) };
  }
  process.stdout.write(JSON.stringify(reply) + "\n");
}
