// A body over the gateway's limit, many times from Node's fetch and from @upstash/redis: every
// attempt must get the JSON 413, never a reset connection ("fetch failed").
import { Redis } from "@upstash/redis";
import { check, env, finish } from "./helpers.mjs";

const url = env("GATEWAY_URL");
const token = env("GATEWAY_TOKEN");
const rounds = Number(env("ROUNDS"));
const value = "x".repeat(2 * 1024 * 1024);

const failures = [];
let refused = 0;
async function post(path) {
  const command = ["SET", "big", value];
  const body = JSON.stringify(path === "/" ? command : [command]);
  try {
    const r = await fetch(url + path, { method: "POST", headers: { authorization: `Bearer ${token}` }, body });
    const json = await r.json();
    if (r.status === 413 && /larger than the limit/.test(json.error)) refused += 1;
    else failures.push(`fetch ${path}: ${r.status} ${JSON.stringify(json)}`);
  } catch (e) {
    failures.push(`fetch ${path}: ${e} ${e.cause?.code ?? e.cause ?? ""}`);
  }
}
// Two at a time, as a busy client sends them.
for (let i = 0; i < rounds; i++) await Promise.all([post("/"), post("/pipeline")]);
check("fetch gets the JSON 413 every time", failures.length === 0 && refused === 2 * rounds, `${refused} of ${2 * rounds}: ${failures.slice(0, 5).join("; ")}`);

// No retries: a reset would be retried and hidden otherwise.
for (const opts of [{}, { enableAutoPipelining: false }]) {
  const redis = new Redis({ url, token, retry: false, ...opts });
  const errors = [];
  const set = async () => {
    try {
      await redis.set("big", value);
      errors.push("the SET succeeded");
    } catch (e) {
      if (!/larger than the limit/.test(e.message)) errors.push(String(e));
    }
  };
  for (let i = 0; i < rounds; i++) await Promise.all([set(), set()]);
  check(`@upstash/redis ${JSON.stringify(opts)} gets the gateway's error every time`, errors.length === 0, errors.slice(0, 5).join("; "));
  check(`@upstash/redis ${JSON.stringify(opts)} still works after`, (await redis.set("small", "v")) === "OK");
}
finish();
