// Run by https.test.mjs as a child process, so that NODE_EXTRA_CA_CERTS (read by node at start-up)
// trusts the test's CA: edgelimit's package decides through a gateway serving HTTPS. Prints one JSON line.
import { Ratelimit, Redis } from "./edgelimit.mjs";

const ratelimit = new Ratelimit({
  redis: new Redis({ url: process.env.GATEWAY_URL, token: process.env.GATEWAY_TOKEN }),
  limiter: Ratelimit.fixedWindow(3, "1 h"),
  prefix: `https-${Date.now()}-${Math.random().toString(36).slice(2)}`,
  ephemeralCache: false,
  failMode: "closed",
});
const decisions = [];
for (let i = 0; i < 4; i++) {
  const { success, reason } = await ratelimit.limit("https-user");
  decisions.push({ success, reason: reason ?? null });
}
console.log(JSON.stringify(decisions));
