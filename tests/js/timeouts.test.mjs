// Timeouts in Node, where one timer serves every request in flight (src/js/boundary.js): each request
// is still answered by its own deadline, however requests come and go around it, and a finished
// request never keeps the process alive.
//
//   bash scripts/with_gateway.sh node --test tests/js/timeouts.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";
import { linkPackage } from "../../scripts/link_pkg.mjs";

linkPackage(fileURLToPath(new URL(".", import.meta.url)));
const { Ratelimit, Redis } = await import("edgelimit");

const url = process.env.EDGELIMIT_TEST_URL;
const token = process.env.EDGELIMIT_TEST_TOKEN;
const skip = !url && "EDGELIMIT_TEST_URL is not set";
const prefix = `timeouts-${Date.now()}`;

/** The gateway's `fetch`, except for requests about identifiers starting with "hang": never answered. */
async function fetchThatHangs(target, init) {
  if (String(init.body).includes("hang")) {
    return new Promise((_, reject) => init.signal.addEventListener("abort", () => reject(init.signal.reason)));
  }
  return fetch(target, init);
}

const limitWith = (timeout) =>
  new Ratelimit({
    redis: new Redis({ url, token, fetch: fetchThatHangs }),
    limiter: Ratelimit.fixedWindow(1000, "1 h"),
    prefix,
    timeout,
    ephemeralCache: false,
  });

test("every request is answered by its own deadline while others come and go", { skip }, async () => {
  const short = limitWith(150);
  const long = limitWith(600);
  const started = performance.now();
  const answers = [long.limit("hang-long"), short.limit("hang-short")].map((answer) =>
    answer.then((response) => ({ response, ms: performance.now() - started })),
  );
  // Requests that finish in between, before and after the short deadline: enough of them that the
  // finished requests' entries outnumber the live ones and are compacted away around the hung two.
  for (let i = 0; i < 50; i++) {
    for (let j = 0; j < 4; j++) assert.equal((await short.limit(`quick-${i}-${j}`)).success, true);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  const [hungLong, hungShort] = await Promise.all(answers);
  assert.equal(hungShort.response.reason, "timeout");
  assert.equal(hungLong.response.reason, "timeout");
  assert.ok(hungShort.ms >= 140 && hungShort.ms < 550, `the 150 ms request answered after ${hungShort.ms} ms`);
  assert.ok(hungLong.ms >= 590, `the 600 ms request answered after ${hungLong.ms} ms`);
  // A request sent after the shared timer went quiet is still timed out.
  const later = performance.now();
  const again = await short.limit("hang-again");
  assert.equal(again.reason, "timeout");
  assert.ok(performance.now() - later >= 140);
});

test("a process whose requests are done exits without waiting for their deadlines", { skip }, async () => {
  const script = `
    import { Ratelimit, Redis } from "edgelimit";
    const redis = new Redis({ url: process.env.EDGELIMIT_TEST_URL, token: process.env.EDGELIMIT_TEST_TOKEN });
    const ratelimit = new Ratelimit({ redis, limiter: Ratelimit.fixedWindow(5, "1 h"), prefix: "${prefix}", timeout: 60000 });
    console.log((await ratelimit.limit("exit")).success);
  `;
  const started = performance.now();
  const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", script], {
    cwd: fileURLToPath(new URL(".", import.meta.url)),
    timeout: 30_000,
  });
  assert.equal(stdout.trim(), "true");
  assert.ok(performance.now() - started < 20_000, "the process exited long before the 60 s deadline");
});

test("a request the runtime cannot start is answered by the fail mode, and the limit works after", { skip }, async () => {
  const ratelimit = new Ratelimit({
    redis: new Redis({ url, token }),
    limiter: Ratelimit.fixedWindow(5, "1 h"),
    prefix,
    failMode: "closed",
    ephemeralCache: false,
  });
  // The shared timer reads `performance.now()` as each request starts: a runtime where that throws.
  const clock = Object.getOwnPropertyDescriptor(globalThis, "performance");
  Object.defineProperty(globalThis, "performance", {
    configurable: true,
    value: { now: () => { throw new Error("no clock in this runtime"); } },
  });
  let failed;
  try {
    failed = await ratelimit.limit("unstartable");
  } finally {
    Object.defineProperty(globalThis, "performance", clock);
  }
  assert.equal(failed.success, false);
  assert.equal(failed.reason, "error");
  const after = await ratelimit.limit("unstartable");
  assert.equal(after.success, true);
  assert.equal(after.remaining, 4, "the request that could not start was never counted");
});
