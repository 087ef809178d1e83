// @upstash/redis 1.39.0 and @upstash/ratelimit 2.2.0 over HTTPS, trusting the test's CA through
// NODE_EXTRA_CA_CERTS (read by node at start-up, used by fetch and https alike).
//   node tls.mjs check     decisions and commands over HTTPS
//   node tls.mjs refused   the certificate is not trusted: every request must fail
//   node tls.mjs load      LOAD_MS of traffic from 16 clients; prints {ok, failed, fingerprints}
//   node tls.mjs h2        HTTP/2 (node:http2, ALPN h2): 32 concurrent streams on one connection
import http2 from "node:http2";
import https from "node:https";
import { Redis } from "@upstash/redis";
import { Ratelimit } from "@upstash/ratelimit";
import { check, env, finish } from "./helpers.mjs";

const mode = process.argv[2];
const url = env("GATEWAY_URL");
const token = env("GATEWAY_TOKEN");

if (mode === "check") {
  const redis = new Redis({ url, token, retry: false });
  check("set", (await redis.set("tls:k", "v")) === "OK");
  check("get", (await redis.get("tls:k")) === "v");
  const p = redis.pipeline();
  p.incr("tls:n");
  p.incr("tls:n");
  check("pipeline", JSON.stringify(await p.exec()) === "[1,2]");
  const ratelimit = new Ratelimit({
    redis,
    limiter: Ratelimit.slidingWindow(3, "1000 s"),
    analytics: false,
    enableProtection: false,
  });
  const decisions = [];
  for (let i = 0; i < 4; i++) decisions.push((await ratelimit.limit("tls-user")).success);
  check("ratelimit decides over HTTPS", JSON.stringify(decisions) === "[true,true,true,false]", JSON.stringify(decisions));
  finish();
} else if (mode === "refused") {
  const redis = new Redis({ url, token, retry: false });
  let error = null;
  try {
    await redis.get("tls:k");
  } catch (e) {
    error = e;
  }
  const why = error ? `${error.message} ${error.cause?.code ?? ""} ${error.cause?.message ?? ""}` : "";
  check("an untrusted certificate is refused", error !== null && /certif|self.signed|UNABLE_TO_VERIFY/i.test(why), why);
  finish();
} else if (mode === "load") {
  const until = Date.now() + Number(env("LOAD_MS"));
  let ok = 0;
  const failures = [];
  const fingerprints = new Set();
  // A new connection (and handshake) per request: sees a rotated certificate at once.
  const fresh = (body) =>
    new Promise((resolve, reject) => {
      const req = https.request(`${url}/pipeline`, {
        method: "POST",
        agent: false,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      });
      req.on("response", (res) => {
        fingerprints.add(res.socket.getPeerCertificate().fingerprint256);
        let text = "";
        res.on("data", (c) => (text += c));
        res.on("end", () => (res.statusCode === 200 ? resolve(JSON.parse(text)) : reject(new Error(`${res.statusCode} ${text}`))));
      });
      req.on("error", reject);
      req.end(body);
    });
  const worker = async (i) => {
    // Half keep-alive fetch through the SDK, half a handshake per request.
    const redis = new Redis({ url, token, retry: false });
    while (Date.now() < until) {
      try {
        if (i % 2 === 0) await redis.incr(`load:${i}`);
        else await fresh(JSON.stringify([["incr", `load:${i}`]]));
        ok++;
      } catch (e) {
        failures.push(`${e.message} ${e.cause?.code ?? ""}`);
      }
    }
  };
  await Promise.all(Array.from({ length: 16 }, (_, i) => worker(i)));
  console.log(JSON.stringify({ ok, failed: failures.length, failures: failures.slice(0, 5), fingerprints: [...fingerprints] }));
} else if (mode === "h2") {
  const session = http2.connect(url);
  await new Promise((resolve, reject) => {
    session.once("connect", resolve);
    session.once("error", reject);
  });
  check("ALPN chose h2", session.alpnProtocol === "h2", session.alpnProtocol);
  const post = (path, body) =>
    new Promise((resolve, reject) => {
      const stream = session.request({ ":method": "POST", ":path": path, authorization: `Bearer ${token}` });
      let status = 0;
      let text = "";
      stream.on("response", (headers) => (status = headers[":status"]));
      stream.on("data", (chunk) => (text += chunk));
      stream.on("end", () => resolve({ status, json: JSON.parse(text) }));
      stream.on("error", reject);
      stream.end(body);
    });
  const replies = await Promise.all(Array.from({ length: 32 }, () => post("/pipeline", '[["incr","h2:n"]]')));
  const counts = replies.map((r) => r.json[0].result).sort((a, b) => a - b);
  check("32 concurrent streams answered", replies.every((r) => r.status === 200), JSON.stringify(replies.map((r) => r.status)));
  check("each counted once", JSON.stringify(counts) === JSON.stringify(Array.from({ length: 32 }, (_, i) => i + 1)), JSON.stringify(counts));
  const single = await post("/", '["get","h2:n"]');
  check("a single command", single.status === 200 && single.json.result === "32", JSON.stringify(single));
  session.close();
  finish();
} else {
  throw new Error(`unknown mode ${mode}`);
}
