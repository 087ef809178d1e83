// Section 1: CPU per `limit()` with the network removed. Each library's real requests are first sent
// through the real gateway to the real redis-server (recording the replies), then answered from memory
// by the fake fetch of fake_fetch.mjs while the library decides, at 1..64 concurrent callers.
import { ReplyTable } from "./fake_fetch.mjs";
import { algorithms, ours, peer } from "./libraries.mjs";
import { alternate, cell } from "./measure.mjs";

export const LIMIT = 1000;

/** The admitting answer's fields that must repeat on replay. */
const decision = ({ success, limit, remaining }) => ({ success, limit, remaining });
const same = (a, b) => JSON.stringify(decision(a)) === JSON.stringify(decision(b));

/**
 * A limiter of `make` with its reply table: two decisions on a fresh key through the real gateway (the
 * first may load the script), the second one's replies kept. Returns the limiter, the table and the
 * second decision, which every replayed decision must repeat.
 */
async function recorded(make, factory, limit, { url, token, realFetch, prefix }) {
  const table = new ReplyTable();
  const limiter = make({ url, token, limiter: factory(limit), prefix });
  globalThis.fetch = table.record(realFetch);
  try {
    await limiter.limit("recorded");
    const expected = await limiter.limit("recorded");
    return { limiter, table, expected };
  } finally {
    globalThis.fetch = realFetch;
  }
}

/** Checks that the replayed answers repeat the recorded one: a broken fake fails the run here. */
async function checkReplay({ limiter, table, expected }, what) {
  const realFetch = globalThis.fetch;
  globalThis.fetch = table.replay();
  try {
    const got = await limiter.limit("replayed");
    if (!same(got, expected)) {
      throw new Error(`${what}: replayed ${JSON.stringify(decision(got))}, recorded ${JSON.stringify(decision(expected))}`);
    }
  } finally {
    globalThis.fetch = realFetch;
  }
}

/**
 * Runs the section. Returns, per algorithm and per caller count, the summaries of each library
 * (cpuUs, requests and bytes per decision); the fake's own cost per request; and per library the
 * recorded reply to one fixed-window decision.
 */
export async function cpuSection({ url, token, callers, cellMs, warmupMs, rounds, log }) {
  const realFetch = globalThis.fetch;
  const rows = [];
  const fakeCost = {};
  const replies = {}; // fixed window: the reply body to one decision's request, for the cold start
  for (const [name, ourFactory, peerFactory] of algorithms) {
    const libs = { edgelimit: [ours, ourFactory] };
    if (peerFactory) libs.peer = [peer, peerFactory];
    const subjects = {};
    for (const [lib, [make, factory]] of Object.entries(libs)) {
      const prefix = `bench-cpu-${lib}-${Date.now()}`;
      subjects[lib] = await recorded(make, factory, LIMIT, { url, token, realFetch, prefix });
      if (!subjects[lib].expected.success) throw new Error(`${lib} ${name}: the recorded decision denied`);
      await checkReplay(subjects[lib], `${lib} ${name}, admitted`);
      // The same with a limit of 1: the second decision was denied, so every replay must deny.
      const denied = await recorded(make, factory, 1, { url, token, realFetch, prefix: `${prefix}-deny` });
      if (denied.expected.success) throw new Error(`${lib} ${name}: the second decision of a limit of 1 was admitted`);
      await checkReplay(denied, `${lib} ${name}, denied`);
    }
    for (const count of callers) {
      log(`cpu: ${name}, ${count} caller(s)`);
      const keys = Array.from({ length: count }, (_, i) => `user:${i}`);
      const cells = {};
      for (const [lib, subject] of Object.entries(subjects)) {
        const replay = subject.table.replay();
        const decide = (caller) => subject.limiter.limit(keys[caller]);
        cells[lib] = async (ms = cellMs) => {
          globalThis.fetch = replay;
          subject.table.resetCounts();
          try {
            const run = await cell(decide, { callers: count, ms });
            const wrong = run.last.find((answer) => !same(answer, subject.expected));
            if (wrong) throw new Error(`${lib} ${name}: answered ${JSON.stringify(decision(wrong))} on replay`);
            return {
              cpuUs: run.cpuUs,
              requests: subject.table.requests / run.decisions,
              bytes: subject.table.bytes / run.decisions,
            };
          } finally {
            globalThis.fetch = realFetch;
          }
        };
      }
      // Warm-up, not counted: V8 takes about a second to settle its tiers (JavaScript and WebAssembly).
      await cells.edgelimit(warmupMs);
      if (cells.peer) await cells.peer(warmupMs);
      rows.push({ algorithm: name, callers: count, ...(await alternate(rounds, cells)) });
    }
    if (name === "fixed window") {
      for (const [lib, subject] of Object.entries(subjects)) {
        fakeCost[lib] = await fakeCostPerRequest(subject.table, cellMs);
        replies[lib] = await (await subject.table.replay()("http://fake/pipeline", { body: subject.table.lastRecorded })).text();
      }
    }
  }
  return { rows, fakeCost, replies };
}

/** µs of CPU the fake itself spends per single-command request (parse, look up, answer, `text()`). */
async function fakeCostPerRequest(table, ms) {
  const fetch = table.replay();
  const init = { method: "POST", body: table.lastRecorded };
  const run = await cell(async () => (await fetch("http://fake/pipeline", init)).text(), { callers: 1, ms });
  return run.cpuUs;
}
