// `make demo`: the Worker of worker.mjs, bundled under the `workerd` condition as wrangler would, runs in
// workerd (through miniflare) against Redis behind the edgelimit gateway; several clients send it traffic
// for a few seconds, and this prints what the limiter decided, second by second, then the headers one
// client saw. Run under scripts/with_gateway.sh, which starts redis-server and the gateway:
//
//   bash scripts/with_gateway.sh node examples/worker/demo.mjs
//
// Needs pkg/ (make pkg). Stops everything and exits by itself (0 when the demo ran).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";
import { bundleWorker, workerOptions } from "../../scripts/bundle_worker.mjs";
import { linkPackage } from "../../scripts/link_pkg.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const SECONDS = 3;
const ALGORITHMS = ["fixedWindow", "slidingWindow", "tokenBucket", "gcra"];
/** Who sends how many requests a second (to every algorithm): one too many, one a little, one calm. */
const CLIENTS = { alice: 20, bob: 7, carol: 2 };

const url = process.env.EDGELIMIT_TEST_URL;
const token = process.env.EDGELIMIT_TEST_TOKEN;
if (!url || !token) {
  console.error("demo: no gateway; run `make demo` (or under bash scripts/with_gateway.sh)");
  process.exit(2);
}
// Whatever happens, the demo ends within a minute.
setTimeout(() => {
  console.error("demo: did not finish within 55 s");
  process.exit(1);
}, 55_000).unref();

// esbuild resolves "edgelimit" through examples/worker/node_modules/edgelimit, a link to pkg/.
linkPackage(here);
const scratch = mkdtempSync(join(tmpdir(), "edgelimit-demo-"));
let miniflare;
try {
  const outfile = join(scratch, "worker.mjs");
  await bundleWorker(join(here, "worker.mjs"), outfile);

  miniflare = new Miniflare({
    ...workerOptions(outfile),
    bindings: {
      UPSTASH_REDIS_REST_URL: url,
      UPSTASH_REDIS_REST_TOKEN: token,
      PREFIX: `edgelimit-demo-${Date.now()}`,
    },
  });
  await miniflare.ready;
  console.log(`A Worker in workerd (miniflare), Redis through the gateway at ${url}.`);
  console.log(
    `Each algorithm allows 5 requests a second; ${Object.entries(CLIENTS)
      .map(([name, rate]) => `${name} sends ${rate}/s`)
      .join(", ")} to each, for ${SECONDS} s.`,
  );
  console.log("Per second of the demo: requests admitted (200) and denied (429), and the RateLimit-Remaining of the last answer.\n");

  const rows = new Map(); // "second identity algorithm" -> { allowed, denied, remaining }
  const seen = {}; // the last response per identity and outcome, for the headers
  const start = Date.now();
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  /** One client hitting one algorithm's endpoint at its rate, one request at a time. */
  async function client(identity, rate, algorithm) {
    for (let i = 0; i < rate * SECONDS; i++) {
      const due = start + (i * 1000) / rate;
      if (due > Date.now()) await sleep(due - Date.now());
      const second = Math.floor((Date.now() - start) / 1000) + 1;
      const response = await miniflare.dispatchFetch(`http://demo.test/?algorithm=${algorithm}`, {
        headers: { "x-client": identity },
      });
      await response.arrayBuffer();
      if (response.status !== 200 && response.status !== 429) {
        throw new Error(`the Worker answered ${response.status}`);
      }
      const key = `${second} ${identity} ${algorithm}`;
      const row = rows.get(key) ?? { second, identity, algorithm, allowed: 0, denied: 0, remaining: "" };
      row[response.status === 200 ? "allowed" : "denied"] += 1;
      row.remaining = response.headers.get("ratelimit-remaining");
      rows.set(key, row);
      seen[`${identity} ${algorithm} ${response.status}`] = response;
    }
  }
  await Promise.all(
    Object.entries(CLIENTS).flatMap(([identity, rate]) => ALGORITHMS.map((algorithm) => client(identity, rate, algorithm))),
  );

  const table = [["second", "identity", "algorithm", "allowed", "denied", "remaining"]];
  const order = (row) => [row.second, Object.keys(CLIENTS).indexOf(row.identity), ALGORITHMS.indexOf(row.algorithm)];
  const sorted = [...rows.values()].sort((a, b) => {
    const [x, y] = [order(a), order(b)];
    return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
  });
  for (const row of sorted) {
    table.push([row.second, row.identity, row.algorithm, row.allowed, row.denied, row.remaining].map(String));
  }
  const widths = table[0].map((_, column) => Math.max(...table.map((line) => line[column].length)));
  for (const [index, line] of table.entries()) {
    if (index > 0 && line[0] !== table[index - 1][0] && index > 1) console.log("");
    console.log(line.map((cell, column) => (column >= 3 || column === 0 ? cell.padStart(widths[column]) : cell.padEnd(widths[column]))).join("  "));
  }
  const allowed = sorted.reduce((sum, row) => sum + row.allowed, 0);
  const denied = sorted.reduce((sum, row) => sum + row.denied, 0);
  console.log(`\ntotal: ${allowed} allowed, ${denied} denied, ${allowed + denied} requests`);

  for (const [identity, status] of [["alice", 429], ["carol", 200]]) {
    const response = seen[`${identity} slidingWindow ${status}`];
    if (!response) continue;
    const outcome = status === 200 ? "admitted" : "denied";
    console.log(`\nThe headers ${identity} got on its last ${outcome} request to slidingWindow (from rateLimitHeaders):`);
    console.log(`  HTTP ${response.status}`);
    for (const [name, value] of response.headers) {
      if (name.startsWith("ratelimit") || name === "retry-after") console.log(`  ${name}: ${value}`);
    }
  }
} finally {
  await miniflare?.dispose();
  rmSync(scratch, { recursive: true, force: true });
}
process.exit(0);
