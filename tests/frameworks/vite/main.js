// The page the test drives: `window.decide(variant, identifier)` answers one decision as
// `{ status, headers }` with edgelimit in memory (limit.js), edgelimit on Redis, or the peer on Redis;
// the gateway's address and token come in the page's query string.
import { Ratelimit, Redis, rateLimitHeaders } from "edgelimit";
import { Ratelimit as PeerRatelimit } from "@upstash/ratelimit";
import { Redis as PeerRedis } from "@upstash/redis";
import { tryOnce } from "./limit.js";

const query = new URLSearchParams(location.search);
const server = { url: query.get("url"), token: query.get("token") };
const onRedis = new Ratelimit({ redis: new Redis(server), limiter: Ratelimit.fixedWindow(5, "1 d") });
const peer = new PeerRatelimit({ redis: new PeerRedis(server), limiter: PeerRatelimit.fixedWindow(5, "1 d"), analytics: false });

const lowerCase = (headers) => Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));

const variants = {
  async memory(id) {
    const { allowed, headers } = await tryOnce(id);
    return { status: allowed ? 200 : 429, headers: lowerCase(headers) };
  },
  async redis(id) {
    const result = await onRedis.limit(id);
    await result.pending;
    return { status: result.success ? 200 : 429, headers: lowerCase(rateLimitHeaders(result)) };
  },
  async peer(id) {
    const result = await peer.limit(id);
    await result.pending;
    const headers = {
      "ratelimit-limit": String(result.limit),
      "ratelimit-remaining": String(result.remaining),
      "ratelimit-reset": String(Math.max(0, Math.ceil((result.reset - Date.now()) / 1000))),
    };
    return { status: result.success ? 200 : 429, headers };
  },
};

window.decide = (variant, id) => variants[variant](id);
document.getElementById("results").textContent = "ready";
