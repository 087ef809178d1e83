// Deno (and Node) for tests/js/lease_runtimes.test.mjs: one Ratelimit with leases makes `decisions`
// decisions on one identifier, then returns its leases. Prints one line of JSON: how many were admitted,
// how many HTTP requests the package sent for them, the entry the runtime resolved and the runtime.
//
//   deno run … lease_cli.mjs '{"url":…,"token":…,"prefix":…,"decisions":…}'
import { Ratelimit, Redis } from "edgelimit";

const args = typeof Deno === "object" ? Deno.args : process.argv.slice(2);
const { url, token, prefix, decisions } = JSON.parse(args[0]);
let requests = 0;
const ratelimit = new Ratelimit({
  redis: new Redis({ url, token, fetch: (target, init) => (requests++, fetch(target, init)) }),
  limiter: Ratelimit.fixedWindow(1_000, "1 d"),
  prefix,
  lease: { tokens: 100, ttl: "1 m" },
});
let admitted = 0;
for (let i = 0; i < decisions; i++) {
  const { success, pending } = await ratelimit.limit("hot");
  await pending;
  if (success) admitted++;
}
const decided = requests;
await ratelimit.returnLeases();
const runtime = typeof Deno === "object" ? `Deno/${Deno.version.deno}` : `Node.js/${process.versions.node}`;
console.log(JSON.stringify({ admitted, requests: decided, entry: import.meta.resolve("edgelimit"), runtime }));
