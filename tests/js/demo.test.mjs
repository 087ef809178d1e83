// `make demo` (examples/worker/demo.mjs) runs to the end by itself and shows what it promises: a table of
// decisions with some requests admitted and some denied, and the RateLimit headers a client got.
//
//   bash scripts/with_gateway.sh node --test tests/js/demo.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const root = fileURLToPath(new URL("../../", import.meta.url));
const skip = !process.env.EDGELIMIT_TEST_URL && "EDGELIMIT_TEST_URL is not set (run under scripts/with_gateway.sh)";

test("the demo runs a Worker, prints its decisions and the headers, and exits 0", { skip }, async (t) => {
  // execFile rejects on a non-zero exit, or when it is still running after a minute.
  const { stdout } = await promisify(execFile)(process.execPath, ["examples/worker/demo.mjs"], {
    cwd: root,
    signal: t.signal,
    timeout: 60_000,
  });
  const lines = stdout.split("\n");

  // Rows: second, identity, algorithm, allowed, denied, remaining.
  const rows = lines
    .map((line) => line.trim().split(/\s+/))
    .filter((cells) => cells.length === 6 && /^\d+$/.test(cells[0]))
    .map(([second, identity, algorithm, allowed, denied, remaining]) => ({
      second: +second, identity, algorithm, allowed: +allowed, denied: +denied, remaining: +remaining,
    }));
  const algorithms = ["fixedWindow", "slidingWindow", "tokenBucket", "gcra"];
  for (const identity of ["alice", "bob", "carol"]) {
    for (const algorithm of algorithms) {
      assert.ok(rows.some((row) => row.identity === identity && row.algorithm === algorithm), `${identity} ${algorithm}: ${stdout}`);
    }
  }
  const sum = (list, field) => list.reduce((total, row) => total + row[field], 0);
  const alice = rows.filter((row) => row.identity === "alice");
  const carol = rows.filter((row) => row.identity === "carol");
  assert.ok(sum(alice, "allowed") > 0 && sum(alice, "denied") > 0, "alice, at 20/s against 5/s, is admitted and denied");
  assert.equal(sum(carol, "denied"), 0, "carol, at 2/s, is never denied");
  // Within a second, no algorithm admits one identity much more than its 5 a second (the window that
  // straddles two of the limit's windows may see up to twice that).
  for (const row of rows) assert.ok(row.allowed <= 10, JSON.stringify(row));

  const total = stdout.match(/^total: (\d+) allowed, (\d+) denied, (\d+) requests$/m);
  assert.ok(total, stdout);
  assert.equal(+total[1], sum(rows, "allowed"));
  assert.equal(+total[2], sum(rows, "denied"));

  // The headers of a denied request and of an admitted one, from rateLimitHeaders in the Worker.
  const denied = stdout.slice(stdout.indexOf("last denied request"));
  assert.match(denied, /HTTP 429\n\s+ratelimit-limit: 5\n\s+ratelimit-remaining: 0\n\s+ratelimit-reset: \d+\n\s+retry-after: [1-9]\d*\n/);
  const admitted = stdout.slice(stdout.indexOf("last admitted request"));
  assert.match(admitted, /HTTP 200\n\s+ratelimit-limit: 5\n\s+ratelimit-remaining: \d+\n\s+ratelimit-reset: \d+\n/);
  assert.doesNotMatch(admitted, /retry-after/);
});
