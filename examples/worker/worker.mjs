// A Cloudflare Worker protecting its endpoint with edgelimit, as a user would write it. `make demo` bundles
// it under the `workerd` condition and runs it in workerd (miniflare); see demo.mjs.
//
//   GET /?algorithm=slidingWindow   with the header `x-client: <identity>`
//
// answers 200 or 429 with the RateLimit header fields of the decision. Bindings: UPSTASH_REDIS_REST_URL,
// UPSTASH_REDIS_REST_TOKEN (Redis, here the edgelimit gateway) and PREFIX (the demo's keys).
import { Ratelimit, Redis, rateLimitHeaders } from "edgelimit";

/** Each algorithm allows about 5 requests a second, so that the demo's traffic shows their differences. */
const LIMITERS = {
  fixedWindow: { window: "1 s", make: () => Ratelimit.fixedWindow(5, "1 s") },
  slidingWindow: { window: "1 s", make: () => Ratelimit.slidingWindow(5, "1 s") },
  tokenBucket: { window: "1 s", make: () => Ratelimit.tokenBucket(5, "1 s", 5) },
  gcra: { window: "1 s", make: () => Ratelimit.gcra(5, "1 s") },
};

/** One `Ratelimit` per algorithm, made at the first request and kept for the isolate's life. */
let limits;

function limitsFor(env) {
  if (!limits) {
    const redis = Redis.fromEnv(env);
    limits = Object.fromEntries(
      Object.entries(LIMITERS).map(([name, { make }]) => [
        name,
        new Ratelimit({ redis, limiter: make(), prefix: `${env.PREFIX}:${name}` }),
      ]),
    );
  }
  return limits;
}

export default {
  async fetch(request, env, ctx) {
    const algorithm = new URL(request.url).searchParams.get("algorithm") ?? "slidingWindow";
    const ratelimit = limitsFor(env)[algorithm];
    if (!ratelimit) {
      return Response.json({ error: `unknown algorithm ${algorithm}` }, { status: 400 });
    }
    const identity = request.headers.get("x-client") ?? "anonymous";
    const result = await ratelimit.limit(identity);
    // Work left after the answer (none here but for cachedFixedWindow) finishes after the response.
    ctx.waitUntil(result.pending);
    const headers = rateLimitHeaders(result, { window: LIMITERS[algorithm].window });
    if (!result.success) {
      return new Response("Too Many Requests\n", { status: 429, headers });
    }
    return Response.json({ hello: identity, algorithm }, { headers });
  },
};
