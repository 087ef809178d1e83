// `make bench`: every section in one run, then target/bench/report.md, report.json and cpu.svg, and the
// markdown on stdout (progress goes to stderr). Run under scripts/with_gateway.sh, which provides the
// gateway and redis-server, with --expose-gc:
//
//   bash scripts/with_gateway.sh node --expose-gc bench/js/main.mjs
//
// BENCH_SMOKE=1: tiny cells and one round, the slow native section skipped, the files written to
// target/bench/smoke/, so that `make test` keeps this code working. Nothing here asserts a timing; a run fails only when a section produced no numbers,
// a library decided wrongly (a broken fake fetch, a refused request), or the package passed its size
// ceiling (192 KiB gzipped with every feature, DESIGN.md: the one size assertion, after the report).
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { performance } from "node:perf_hooks";
import { chart } from "./chart.mjs";
import { coldStartSection } from "./cold_start.mjs";
import { cpuSection } from "./cpu.mjs";
import { e2eSection } from "./e2e.mjs";
import { edgesSection } from "./edges.mjs";
import { faultSection } from "./faults.mjs";
import { firstCompileSection } from "./first_compile.mjs";
import { frameworksSection } from "./frameworks.mjs";
import { leaseSection } from "./lease.mjs";
import { limitsSection } from "./limits.mjs";
import { inMemorySection } from "./in_memory.mjs";
import { pkgDir, peerName, root, version, window } from "./libraries.mjs";
import { nativeSection } from "./native.mjs";
import { multiRegionSection } from "./multi_region.mjs";
import { markdown } from "./report.mjs";
import { sizeSection } from "./size.mjs";

const smoke = process.env.BENCH_SMOKE === "1";
const url = process.env.EDGELIMIT_TEST_URL;
const token = process.env.EDGELIMIT_TEST_TOKEN;
if (!url || !token) throw new Error("run under scripts/with_gateway.sh (EDGELIMIT_TEST_URL is not set)");
if (!globalThis.gc) throw new Error("run with node --expose-gc");

const callers = [1, 4, 16, 64];
const config = smoke
  ? {
      cpu: { callers, cellMs: 5, warmupMs: 5, rounds: 1 },
      inMemory: { cellMs: 5, warmupMs: 5, rounds: 1, manyKeys: 1000, memoryKeys: [1000], memoryRounds: 1 },
      e2e: { callers, cellMs: 20, rounds: 1 },
      lease: { callers: [1, 16, 64], cellMs: 20, rounds: 1 },
      coldStart: { samples: 1 },
      multiRegion: { clients: 3, limit: 3, delaysMs: [1, 2, 5], gapMs: 0, rounds: 1 },
      faults: { callers: 4, beforeMs: 300, afterMs: 1500 },
      edges: {
        boundaries: { processes: 2, callers: 2, delayMs: 50, windowMs: 250, limit: 20, durationMs: 1100, rounds: 1 },
        skew: { skewsMs: [-100, 100], windowMs: 250, limit: 20, durationMs: 600, callers: 2 },
        clock: { callers: 4, cellMs: 20, rounds: 1 },
        memory: { identifiers: 20, runMs: 300 },
      },
      frameworks: { rounds: 1 },
      limits: { callers: [1, 64], cpuMs: 5, warmupMs: 5, e2eMs: 20, rounds: 1, over: { callers: 4, requests: 20, quota: 1000, burst: 5 } },
    }
  : {
      cpu: { callers, cellMs: 300, warmupMs: 1000, rounds: 5 },
      inMemory: { cellMs: 300, warmupMs: 1000, rounds: 5, manyKeys: 100_000, memoryKeys: [100_000, 1_000_000], memoryRounds: 3 },
      e2e: { callers, cellMs: 2000, rounds: 3 },
      lease: { callers: [1, 16, 64], cellMs: 2000, rounds: 3 },
      coldStart: { samples: 9 },
      multiRegion: { clients: 6, limit: 20, delaysMs: [5, 40, 120], gapMs: 20, rounds: 5 },
      faults: { callers: 16, beforeMs: 2000, afterMs: 3000 },
      edges: {
        boundaries: { processes: 8, callers: 8, delayMs: 50, windowMs: 1000, limit: 200, durationMs: 5500, rounds: 2 },
        skew: { skewsMs: [-10_000, -1_000, -100, 100, 1_000, 10_000], windowMs: 1000, limit: 50, durationMs: 3000, callers: 4 },
        clock: { callers: 16, cellMs: 2000, rounds: 5 },
        memory: { identifiers: 200, runMs: 12_000 },
      },
      frameworks: { rounds: 5 },
      limits: { callers: [1, 16, 64], cpuMs: 300, warmupMs: 1000, e2eMs: 2000, rounds: 5, over: { callers: 8, requests: 200, quota: 1000, burst: 20 } },
    };

const started = performance.now();
const log = (line) => console.error(`bench: ${line}`);

const cpu = await cpuSection({ url, token, ...config.cpu, log });
const inMemory = await inMemorySection({ ...config.inMemory, log });
const e2e = await e2eSection({ url, token, ...config.e2e, log });
const lease = await leaseSection({ url, token, ...config.lease, log });
const native = smoke ? null : await nativeSection({ log });
const size = await sizeSection();
const coldStart = await coldStartSection({ ...config.coldStart, replies: cpu.replies, log });
const firstCompile = await firstCompileSection({ replies: cpu.replies, log });
const multiRegion = await multiRegionSection({ ...config.multiRegion, log });
const faults = await faultSection({ ...config.faults, log });
const edges = await edgesSection({ url, token, ...config.edges, log });
const frameworks = await frameworksSection({ url, token, ...config.frameworks, log });
const limits = await limitsSection({ url, token, ...config.limits, log });

const results = {
  meta: {
    mode: smoke ? "Smoke" : "Full",
    date: new Date().toISOString(),
    node: process.versions.node,
    cpus: cpus().length,
    cpuModel: cpus()[0].model.trim(),
    edgelimit: JSON.parse(readFileSync(`${pkgDir}package.json`, "utf8")).version,
    wasmBytes: readFileSync(`${pkgDir}edgelimit_bg.wasm`).length,
    peerName,
    rateLimiterFlexible: version("rate-limiter-flexible"),
    window,
    rounds: `CPU ${config.cpu.rounds}, in-memory ${config.inMemory.rounds} (memory ${config.inMemory.memoryRounds}), end to end ${config.e2e.rounds}, cold start ${config.coldStart.samples}`,
    e2eCellMs: config.e2e.cellMs,
    gateway: /\/release\//.test(process.env.EDGELIMIT_GATEWAY_BIN) ? "release" : "debug",
    seconds: (performance.now() - started) / 1000,
    config,
  },
  cpu,
  inMemory,
  e2e,
  lease,
  native,
  size,
  coldStart,
  firstCompile,
  multiRegion,
  faults,
  edges,
  frameworks,
  limits,
};
checkNumbers(results);
for (const row of cpu.rows) {
  for (const lib of ["edgelimit", "peer"]) {
    if (row[lib] && !(row[lib].requests.median > 0)) throw new Error(`${lib} ${row.algorithm}: no request reached the fake`);
  }
}

for (const row of multiRegion.rows) {
  for (const lib of ["edgelimit", "peer"]) {
    if (row[lib] && !(row[lib].admitted > 0)) throw new Error(`${lib} multi-region ${row.algorithm}: nothing admitted`);
  }
}

// One Redis (its append-only file synced on every write) loses no admitted decision and admits no one
// over the limit, whatever the fault; a cluster's master replicates asynchronously, so its row is shown
// as measured.
for (const row of faults.rows) {
  if (row.strict && (row.missing > 0 || row.overLimit > 0)) {
    throw new Error(`fault "${row.name}": ${row.missing} admitted decisions missing from Redis, ${row.overLimit} over the limit`);
  }
}

// Decided on Redis's clock, edgelimit admits no request past a limit at a window boundary, nor with an
// instance's clock off (within a window of Redis's, as the skews here are), with or without leases, nor
// after a reset by a skewed instance.
const overEdge = [
  ...edges.boundaries.rows.map((row) => [`boundaries, ${row.algorithm}`, row.edgelimit]),
  ...edges.skew.rows.flatMap((row) =>
    Object.entries(row.cells)
      .filter(([name]) => name.startsWith("Redis's clock"))
      .map(([name, cell]) => [`${row.skewMs} ms off, ${name}`, cell])
      .concat([[`${row.skewMs} ms off, a reset`, row.reset]])),
].find(([, cell]) => cell.over > 0 || cell.reasons > 0);
if (overEdge) throw new Error(`edges, ${overEdge[0]}: ${JSON.stringify(overEdge[1])}`);

const out = `${root}target/bench/${smoke ? "smoke/" : ""}`;
mkdirSync(out, { recursive: true });
const report = markdown(results);
writeFileSync(`${out}report.md`, report);
writeFileSync(`${out}report.json`, `${JSON.stringify(results, null, 2)}\n`);
writeFileSync(`${out}cpu.svg`, chart({ cpuRows: cpu.rows, e2eRows: e2e.rows, peerName }));
log(`wrote ${out}report.md, report.json and cpu.svg`);
console.log(report);

if (size.total.gzipped > size.ceiling) {
  throw new Error(`the package is ${size.total.gzipped} B gzipped, over its ceiling of ${size.ceiling} B (DESIGN.md)`);
}

/** Fails unless every section produced numbers: no NaN, no infinity, no empty table. */
function checkNumbers(value, path = "results") {
  if (typeof value === "number" && !Number.isFinite(value)) throw new Error(`${path} is ${value}`);
  if (Array.isArray(value) && value.length === 0) throw new Error(`${path} is empty`);
  if (value && typeof value === "object") {
    for (const [key, inner] of Object.entries(value)) checkNumbers(inner, `${path}.${key}`);
  }
}
