// How many times a decision calls from WebAssembly into JavaScript, counted by wrapping every import of
// the package's module (a structure test, not a timing: see the budget in src/wasm/mod.rs).
//
//   bash scripts/with_gateway.sh node --test tests/js/boundary.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { linkPackage } from "../../scripts/link_pkg.mjs";

/** Calls per import name since the last `take()`. */
const calls = new Map();
const take = () => {
  const taken = Object.fromEntries(calls);
  calls.clear();
  return taken;
};
const total = (counted) => Object.values(counted).reduce((sum, count) => sum + count, 0);

// Every import function of the instance the package makes is wrapped to count its calls.
const Instance = WebAssembly.Instance;
WebAssembly.Instance = function CountingInstance(module, imports) {
  const wrapped = {};
  for (const [space, functions] of Object.entries(imports ?? {})) {
    wrapped[space] = {};
    for (const [name, value] of Object.entries(functions)) {
      wrapped[space][name] =
        typeof value !== "function"
          ? value
          : function (...args) {
              const key = name.replace(/_[0-9a-f]{16}$/, "");
              calls.set(key, (calls.get(key) ?? 0) + 1);
              return value.apply(this, args);
            };
    }
  }
  return new Instance(module, wrapped);
};
linkPackage(fileURLToPath(new URL(".", import.meta.url)));
const { Ratelimit, Redis } = await import("edgelimit");

/** The budgets of src/wasm/mod.rs, calls into JavaScript per warm decision. */
const IN_MEMORY = 0;
const ON_REDIS = 12;

const url = process.env.EDGELIMIT_TEST_URL;
const token = process.env.EDGELIMIT_TEST_TOKEN;

const algorithms = {
  fixedWindow: Ratelimit.fixedWindow(1e9, "1 h"),
  slidingWindow: Ratelimit.slidingWindow(1e9, "1 h"),
  tokenBucket: Ratelimit.tokenBucket(1e6, "1 s", 1e9),
  gcra: Ratelimit.gcra(1e9, "1 h"),
};

test("in memory, a warm decision calls into JavaScript at most as src/wasm/mod.rs budgets", async () => {
  for (const [name, limiter] of Object.entries(algorithms)) {
    const ratelimit = new Ratelimit({ limiter });
    for (let call = 0; call < 100; call++) await ratelimit.limit(`k${call % 10}`);
    take();
    const decisions = 1000;
    for (let call = 0; call < decisions; call++) await ratelimit.limit(`k${call % 10}`);
    const counted = take();
    assert.ok(total(counted) / decisions <= IN_MEMORY, `${name}: ${total(counted) / decisions} per decision: ${JSON.stringify(counted)}`);
  }
});

test("on Redis, a warm decision calls into JavaScript at most as src/wasm/mod.rs budgets", { skip: !url && "EDGELIMIT_TEST_URL is not set" }, async () => {
  for (const [name, limiter] of Object.entries(algorithms)) {
    const ratelimit = new Ratelimit({ redis: new Redis({ url, token }), limiter, prefix: `boundary-${Date.now()}` });
    for (let call = 0; call < 20; call++) await ratelimit.limit(`k${call % 10}`);
    take();
    const decisions = 200;
    for (let call = 0; call < decisions; call++) await ratelimit.limit(`k${call % 10}`);
    const counted = take();
    assert.ok(total(counted) / decisions <= ON_REDIS, `${name}: ${total(counted) / decisions} per decision: ${JSON.stringify(counted)}`);
  }
});
