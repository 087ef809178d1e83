// @upstash/redis 1.39.0 against the gateway.
import { Redis } from "@upstash/redis";
import { check, env, finish } from "./helpers.mjs";

const url = env("GATEWAY_URL");
const token = env("GATEWAY_TOKEN");
const readonlyToken = env("GATEWAY_READONLY_TOKEN");

const variants = [
  { name: "base64+auto", opts: {} },
  { name: "plain+auto", opts: { responseEncoding: false } },
  { name: "base64+noauto", opts: { enableAutoPipelining: false } },
  { name: "plain+noauto", opts: { responseEncoding: false, enableAutoPipelining: false } },
];

for (const { name, opts } of variants) {
  const redis = new Redis({ url, token, retry: false, ...opts });
  const p = `${name}:`;
  check(`${name} set`, (await redis.set(`${p}k`, "v")) === "OK");
  check(`${name} get`, (await redis.get(`${p}k`)) === "v");
  check(`${name} incr`, (await redis.incr(`${p}n`)) === 1);
  check(`${name} del`, (await redis.del(`${p}k`, `${p}n`)) === 2);
  check(`${name} get missing`, (await redis.get(`${p}k`)) === null);

  const weird = 'héllo "wörld"\nline2\ttab \\ ✓ 😀 {"json":[1]}';
  await redis.set(`${p}weird`, weird);
  check(`${name} unicode/quotes/newlines`, (await redis.get(`${p}weird`)) === weird);

  const big = 1796220043830;
  await redis.set(`${p}big`, big);
  check(`${name} 1.8e12 integer`, Number(await redis.get(`${p}big`)) === big);
  check(`${name} incrby 1.8e12`, (await redis.incrby(`${p}ctr`, 1.8e12)) === 1.8e12);
  await redis.set(`${p}ex`, "x", { px: big - 1796220000000 });
  const pttl = await redis.pttl(`${p}ex`);
  check(`${name} px as exact integer`, pttl > 0 && pttl <= 43830, `pttl=${pttl}`);

  const evalResult = await redis.eval("return {KEYS[1], ARGV[1], 5}", [`${p}key1`], ["arg1"]);
  check(`${name} eval`, JSON.stringify(evalResult) === JSON.stringify([`${p}key1`, "arg1", 5]), JSON.stringify(evalResult));

  const script = `return '${name}' .. ARGV[1]`;
  let missed = false;
  try {
    await redis.evalsha("0000000000000000000000000000000000000000", [], ["x"]);
  } catch (e) {
    missed = `${e}`.includes("NOSCRIPT");
  }
  check(`${name} evalsha miss is NOSCRIPT`, missed);
  const sha = await redis.scriptLoad(script);
  check(`${name} script load`, /^[0-9a-f]{40}$/.test(sha), sha);
  check(`${name} evalsha hit`, (await redis.evalsha(sha, [], ["!"])) === `${name}!`);

  const pipe = redis.pipeline();
  pipe.set(`${p}p1`, "x");
  pipe.incr(`${p}counter`);
  pipe.get(`${p}p1`);
  const pr = await pipe.exec();
  check(`${name} pipeline of 3`, JSON.stringify(pr) === JSON.stringify(["OK", 1, "x"]), JSON.stringify(pr));

  const tx = redis.multi();
  tx.set(`${p}m1`, "y");
  tx.incr(`${p}counter`);
  tx.get(`${p}m1`);
  const tr = await tx.exec();
  check(`${name} multi of 3`, JSON.stringify(tr) === JSON.stringify(["OK", 2, "y"]), JSON.stringify(tr));

  const failing = redis.pipeline();
  failing.set(`${p}s`, "text");
  failing.incr(`${p}s`);
  failing.get(`${p}s`);
  const fr = await failing.exec({ keepErrors: true });
  check(
    `${name} failing command in pipeline`,
    fr[0].result === "OK" && `${fr[1].error}`.includes("not an integer") && fr[2].result === "text",
    JSON.stringify(fr),
  );
  let threw = false;
  try {
    await redis.pipeline().set(`${p}s2`, "a").incr(`${p}s2`).exec();
  } catch (e) {
    threw = `${e}`.includes("not an integer");
  }
  check(`${name} failing pipeline throws by default`, threw);
}

// Concurrent auto-pipelined commands are batched and all answered.
{
  const redis = new Redis({ url, token, retry: false });
  const results = await Promise.all(Array.from({ length: 20 }, (_, i) => redis.incr(`auto:${i % 4}`)));
  check("auto-pipelining concurrent", results.length === 20 && results.every((r) => typeof r === "number"));
}

// Bad token and read-only token.
{
  const bad = new Redis({ url, token: "wrong-token", retry: false });
  let msg = "";
  try { await bad.get("k"); } catch (e) { msg = `${e}`; }
  check("bad token refused", msg.includes("WRONGPASS"), msg);

  const ro = new Redis({ url, token: readonlyToken, retry: false });
  await new Redis({ url, token, retry: false }).set("ro:k", "v");
  check("read-only token reads", (await ro.get("ro:k")) === "v");
  msg = "";
  try { await ro.set("ro:k", "w"); } catch (e) { msg = `${e}`; }
  check("read-only token cannot write", msg.includes("NOPERM"), msg);
}

finish();
