// The report: every section's results as markdown (report.md) beside the same numbers as JSON
// (report.json, written by main.mjs). Cells read "median (min–max)" over the rounds; a ratio is
// edgelimit's median over the peer's (below 1: edgelimit uses less CPU, or is slower in throughput).
import { faultsMarkdown } from "./faults.mjs";
import { firstCompileMarkdown } from "./first_compile.mjs";
import { frameworksMarkdown } from "./frameworks.mjs";
import { limitsMarkdown } from "./limits.mjs";
import { num, table } from "./markdown.mjs";
import { EDGELIMIT_MAX_KEYS } from "./in_memory.mjs";

const spreadText = ({ median, min, max, rounds }) => (rounds > 1 ? `${num(median)} (${num(min)}–${num(max)})` : num(median));
const ratioText = (ratio) => `${ratio.toFixed(2)}×`;
const kib = (bytes) => `${num(bytes / 1024)} KiB`;
const mib = ({ median, min, max, rounds }) =>
  rounds > 1 ? `${num(median / 2 ** 20)} MiB (${num(min / 2 ** 20)}–${num(max / 2 ** 20)})` : `${num(median / 2 ** 20)} MiB`;

function cpuMarkdown({ rows, fakeCost }, peerName) {
  const body = rows.map((row) => {
    const { edgelimit: o, peer: p } = row;
    return [
      row.algorithm,
      row.callers,
      spreadText(o.cpuUs),
      p ? spreadText(p.cpuUs) : "—",
      p ? `**${ratioText(row.ratio.cpuUs)}**` : "—",
      num(o.requests.median),
      p ? num(p.requests.median) : "—",
      num(o.bytes.median),
      p ? num(p.bytes.median) : "—",
    ];
  });
  return `## 1. CPU per \`limit()\`, network removed

\`globalThis.fetch\` is replaced by an in-process fake answering each library's real requests with the
replies the real gateway and redis-server gave them at the start of the run (see bench/README.md). CPU is
\`process.cpuUsage()\` (user + system) per decision. Peer: ${peerName}. Both: \`ephemeralCache: false\`,
default timeout; the peer: \`analytics: false\`, \`enableTelemetry: false\`. A ratio below 1× means edgelimit
costs less CPU. GCRA has no peer.

${table(
  ["algorithm", "callers", "edgelimit µs", "peer µs", "edgelimit / peer", "edgelimit req/decision", "peer req/decision", "edgelimit body B/decision", "peer body B/decision"],
  body,
)}

The fake itself costs ${num(fakeCost.edgelimit)} µs (edgelimit's request) and ${num(fakeCost.peer)} µs (the peer's) of CPU
per single-command request, included above. It answers with a Response-like object
(\`{ status, ok, headers, text(), json(), arrayBuffer() }\`) rather than \`new Response()\`: undici's
\`Response\` plus \`text()\` alone costs about 20 µs in Node 20 and would drown both libraries.`;
}

function inMemoryMarkdown({ rows, memory }) {
  const decisions = rows.map((row) => [row.shape, spreadText(row.edgelimit.cpuUs), spreadText(row.peer.cpuUs), `**${ratioText(row.ratio.cpuUs)}**`]);
  const memoryRows = memory.map(({ keys, edgelimit: o, peer: p, ratio }) => [
    keys.toLocaleString("en"),
    mib(o.wasm),
    mib(o.rss),
    mib(p.heapUsed),
    mib(p.rss),
    `${num(o.wasm.median / Math.min(keys, EDGELIMIT_MAX_KEYS))} B`,
    `${num(p.heapUsed.median / keys)} B`,
    `**${ratioText(ratio.kept)}**`,
  ]);
  return `## 2. In-memory decision from JavaScript

edgelimit \`new Ratelimit({ limiter: Ratelimit.fixedWindow(1e9, "3600 s"), ephemeralCache: false })\` (no \`redis\`:
the in-memory store) beside rate-limiter-flexible's \`new RateLimiterMemory({ points: 1e9, duration: 3600 })\`:
µs of CPU per \`await limit(key)\` / \`await consume(key)\`, one caller, a limit never reached.

${table(["keys", "edgelimit µs", "rate-limiter-flexible µs", "edgelimit / rate-limiter-flexible"], decisions)}

Memory after one decision on each of N keys, each sample in a fresh \`node --expose-gc\` process, after a full gc:
edgelimit's growth of its WebAssembly memory (\`memory.buffer.byteLength\`, which never shrinks) and of the
process's rss; rate-limiter-flexible's growth of \`heapUsed\` (a Map entry, a record and a timer per key) and
of rss. edgelimit's in-memory store is bounded to ${EDGELIMIT_MAX_KEYS.toLocaleString("en")} keys (it evicts past that), so at 1M keys it
holds ${EDGELIMIT_MAX_KEYS.toLocaleString("en")} of them; rate-limiter-flexible keeps every key until its window ends.

${table(["keys", "edgelimit wasm memory", "edgelimit rss", "rate-limiter-flexible heapUsed", "rate-limiter-flexible rss", "edgelimit B per key held (wasm)", "rate-limiter-flexible B per key held (heap)", "wasm / heap"], memoryRows)}`;
}

function e2eMarkdown({ rows }, { e2eCellMs: cellMs, gateway }) {
  const body = rows.map(({ callers, edgelimit: o, peer: p, ratio }) => [
    callers,
    spreadText(o.perSecond),
    spreadText(p.perSecond),
    `**${ratioText(ratio.perSecond)}**`,
    `${num(o.p50Ms.median)} / ${num(o.p99Ms.median)}`,
    `${num(p.p50Ms.median)} / ${num(p.p99Ms.median)}`,
    spreadText(o.cpuUs),
    spreadText(p.cpuUs),
    ratioText(ratio.cpuUs),
    `${spreadText(o.redisUs)} / ${spreadText(p.redisUs)}`,
    ratioText(ratio.redisUs),
  ]);
  return `## 3. End to end through the gateway

A real redis-server and the ${gateway} build of \`edgelimit-gateway\` on loopback, fixed window, a limit never reached,
each caller on a key of its own, each cell ${num(cellMs / 1000)} s. The client (Node), the gateway and Redis share the
machine's cores, so this measures the whole loop, not the library alone. Throughput ratio above 1× means
edgelimit decides more per second; latency is per \`await limit()\`. Redis µs per decision: the \`usec\` of every
command in \`INFO commandstats\` (asked through the gateway before and after each cell) over the cell's decisions, the
time Redis spent inside commands; on cores shared with the client and the gateway it includes Redis being preempted.

${table(
  ["callers", "edgelimit decisions/s", "peer decisions/s", "edgelimit / peer", "edgelimit p50 / p99 ms", "peer p50 / p99 ms", "edgelimit client CPU µs", "peer client CPU µs", "CPU edgelimit / peer", "Redis µs per decision (edgelimit / peer)", "Redis edgelimit / peer"],
  body,
)}`;
}

/** The idle row of section 3b: admitted of the limit when some leasing clients go idle, beside the peer. */
function idleMarkdown({ rows, clients, idleClients, lease }) {
  const share = (lib) => (lib ? `${lib.admitted} (${num((100 * lib.under) / rows[0].limit)} % under, ${lib.over} over)` : "—");
  const worst = Math.max(...rows.map((row) => row.leased.under / row.limit));
  return `Worst under-admission seen when some clients go idle: ${clients} clients (an instance each) on one identifier
of limit ${rows[0].limit} decide together (15, 30 or 50 decisions each, a run each, the worst kept); then ${idleClients} of them go
idle keeping their leases (\`lease: { tokens: ${lease.tokens}, ttl: "${lease.ttl}" }\`, at most a tenth of the limit each) and the
others decide until denied. **Worst: ${num(100 * worst)} % of the limit withheld**, and never one admission over it.

${table(
  ["algorithm", "leased: admitted of the limit", "peer: admitted of the limit"],
  rows.map((row) => [row.algorithm, share(row.leased), share(row.peer)]),
)}`;
}

function leaseMarkdown({ rows, lease, idle }, { lease: { cellMs } }) {
  const body = rows.map(({ callers, edgelimit: o, leased: l, peer: p, leasedRatio }) => [
    callers,
    `${num(o.requests.median)} / ${num(l.requests.median)} / ${num(p.requests.median)}`,
    `${spreadText(o.perSecond)} / ${spreadText(l.perSecond)} / ${spreadText(p.perSecond)}`,
    `**${ratioText(leasedRatio)}**`,
    `${num(o.p50Ms.median)} / ${num(o.p99Ms.median)}`,
    `${num(l.p50Ms.median)} / ${num(l.p99Ms.median)}`,
    `${num(p.p50Ms.median)} / ${num(p.p99Ms.median)}`,
  ]);
  return `## 3b. A hot identifier end to end, with leases

Every caller on one identifier, fixed window, a limit never reached, each cell ${num(cellMs / 1000)} s, through the same
gateway and Redis: edgelimit without leases, edgelimit with \`lease: { tokens: ${lease.tokens}, ttl: "${lease.ttl}" }\`
(decisions answered from units reserved in Redis, never past the limit), and the peer. Requests are HTTP
requests per decision counted at \`fetch\` (the peer's auto-pipelining batches concurrent commands).

${table(
  ["callers", "requests per decision (edgelimit / leased / peer)", "decisions/s (edgelimit / leased / peer)", "leased / peer", "edgelimit p50 / p99 ms", "leased p50 / p99 ms", "peer p50 / p99 ms"],
  body,
)}

${idleMarkdown(idle)}`;
}

function nativeMarkdown(native) {
  if (!native) return "## 4. Native: governor and raw redis-benchmark\n\nSkipped in smoke mode.";
  return `## 4. Native: governor and raw redis-benchmark

### MemoryBackend beside governor, and the full ephemeral cache (\`cargo bench --bench memory_backend\`, criterion)
${native.criterion.markdown.replace(/^### /gm, "#### ")}

### The gateway beside raw redis-benchmark, same EVALSHA script (\`bench/gateway/run.sh\`)

${native.gateway.markdown}`;
}

function sizeMarkdown(size) {
  const row = ({ what, bytes, gzipped }) => [what, bytes.toLocaleString("en"), gzipped.toLocaleString("en"), `${(gzipped / size.peer.gzipped).toFixed(2)}×`];
  const under = size.total.gzipped <= size.ceiling;
  return `## 5. Package size and cold start

### Size (gzip level 9)

${table(["what", "bytes", "gzipped", "× peer"], [row(size.peer), ...size.parts.map(row), row({ ...size.total, what: "**edgelimit total**" })])}

Ceiling: ${kib(size.ceiling)} gzipped for the whole package, every feature in it (\`MultiRegionRatelimit\` too). edgelimit's
total, ${kib(size.total.gzipped)}, is **${under ? "under" : "OVER"}** it${under ? "" : ": the run fails"}.

${wasmItemsMarkdown(size.wasm)}`;
}

/** twiggy's view of the .wasm: its largest items and what keeps each, and its largest subtrees. */
function wasmItemsMarkdown({ largest, subtrees }) {
  const name = (text) => `\`${text.replace(/::h[0-9a-f]{16}$/, "").replace(/\[[0-9a-f]{16}\]/g, "").replaceAll("|", "\\|")}\``;
  const bytes = (value) => value.toLocaleString("en");
  return `### What the .wasm holds (twiggy, on the same build with its names: target/pkg-names/)

The largest items by their own bytes, and the item that keeps each (its immediate dominator: everything
that uses it reaches it through that one; "(root)": an export, the data, or the function table):

${table(["item", "own bytes", "kept by"], largest.map((item) => [name(item.name), bytes(item.own), item.keptBy === "(root)" ? "(root)" : name(item.keptBy)]))}

The largest subtrees hanging from the root (what would go with each):

${table(["item", "retained bytes", "own bytes"], subtrees.map((item) => [name(item.name), bytes(item.retained), bytes(item.own)]))}`;
}

function coldStartMarkdown(cold) {
  const fields = {
    imported: "import",
    made: "limiter made",
    decided: "first decision",
    importAndDecide: "import + first decision",
    whole: "whole start",
  };
  const rows = Object.entries(fields).map(([field, what]) => [
    what,
    ...["baseline", "edgelimit", "peer"].map((name) => spreadText(cold[name][field])),
    num(cold.edgelimit.aboveBaseline[field]),
    num(cold.peer.aboveBaseline[field]),
    cold.ratio[field] === null ? "within noise" : `**${ratioText(cold.ratio[field])}**`,
  ]);
  return `### Cold start in workerd (miniflare), ms

A new Miniflare instance per start, ${cold.baseline.whole.rounds} start(s) of each Worker, alternating baseline, edgelimit, peer.
Each Worker imports its library dynamically on its first request and takes one decision; the baseline's
"library" imports nothing. "import + first decision" is timed between two calls the Worker makes to a Node
service binding (workerd's clock stands still between I/O), so it leaves out what workerd does as the Worker
loads (parsing the modules, compiling edgelimit's CompiledWasm module); its three steps are timed between
the calls the Worker makes after each (the import, \`new Ratelimit\` with its \`Redis\` and limiter, the first
\`limit()\`), each with one call of its own. "whole start" is \`new Miniflare()\` to the first response: it
includes that, and workerd's own start, which varies by more than the libraries cost. A library's cost is
its median minus the baseline's.

${table(["what", "baseline", "edgelimit", "peer", "edgelimit − baseline", "peer − baseline", "edgelimit / peer"], rows)}`;
}

function multiRegionMarkdown({ clients, limit, delaysMs, gapMs, rounds, rows }) {
  const both = (o, p, field) => `${o[field]} / ${p ? p[field] : "—"}`;
  const body = rows.map(({ algorithm, edgelimit: o, peer: p }) => [
    algorithm,
    both(o, p, "sent"),
    `**${o.admitted}** (${o.perRound.join(", ")})`,
    p ? `**${p.admitted}** (${p.perRound.join(", ")})` : "— (none across regions)",
    both(o, p, "excess"),
    both(o, p, "admittedAfterMerge"),
  ]);
  return `## 6. Multi-region over-admission

Three regions (separate redis-servers behind one gateway); ${clients} clients spread over three locations, each
reaching the regions through TCP proxies delaying every chunk by a one-way ${delaysMs.join(" / ")} ms (nearest, next,
farthest region). Per round, a limit of ${limit} per window, and the clients together send twice that, one request
after another each (${gapMs} ms apart), \`pending\` left running as \`waitUntil\` does; then, once every merge has
settled, one more request per client. ${rounds} round(s) per library, alternating, fresh keys each. Counted,
summed over the rounds (per round in parentheses); the limit allows ${limit * rounds} in all. The token bucket
(${limit} tokens, refilled over the window) and GCRA (${limit} per window) have no peer across regions.

${table(["algorithm", "sent (edgelimit / peer)", "edgelimit admitted", "peer admitted", "over the limit (edgelimit / peer)", "admitted after the merge (edgelimit / peer)"], body)}`;
}

const ALGORITHM_NAMES = { fixedWindow: "fixed window", slidingWindow: "sliding window", tokenBucket: "token bucket", gcra: "GCRA" };
const overText = (cell) => (cell ? `${cell.over}${cell.errors ? ` (${cell.errors} errors)` : ""}` : "—");

function edgesMarkdown({ boundaries: b, skew: s, clock: c, memory: m }) {
  const boundaryRows = b.rows.map((row) => [
    ALGORITHM_NAMES[row.algorithm],
    `${row.edgelimit.admitted} / ${row.peer ? row.peer.admitted : "—"}`,
    `**${row.edgelimit.over}** / ${row.peer ? `**${row.peer.over}**` : "—"}`,
    `${row.edgelimit.windows} / ${row.peer ? row.peer.windows : "—"}`,
  ]);
  const lines = s.configs.flatMap(({ name, algorithms }) => algorithms.map((algorithm) => [name, algorithm]));
  const skewRows = [
    ...lines.map(([name, algorithm]) => [`${name}: ${ALGORITHM_NAMES[algorithm]}`, ...s.rows.map((row) => overText(row.cells[`${name}|${algorithm}`]))]),
    ["Redis's clock, leases: a reset", ...s.rows.map((row) => overText(row.reset))],
  ];
  const skews = s.rows.map((row) => `${row.skewMs > 0 ? "+" : ""}${row.skewMs.toLocaleString("en")} ms`);
  const clockRows = c.rows.map(({ algorithm, callers, redisClock: r, localClock: l, ratio }) => [
    ALGORITHM_NAMES[algorithm],
    callers,
    `${spreadText(r.cpuUs)} / ${spreadText(l.cpuUs)}`,
    ratioText(ratio.cpuUs),
    `${spreadText(r.redisUs)} / ${spreadText(l.redisUs)}`,
    ratioText(ratio.redisUs),
  ]);
  const perIdentifier = (lib) => num(m.alive[lib] * m.bytesPerKey);
  return `## 8. Exact at every edge: window boundaries, skewed clocks, the Redis clock's cost

**Boundaries.** ${b.processes} processes × ${b.callers} callers on one hot identifier, every request held 0 to ${2 * b.delayMs} ms (${b.delayMs} ms on
average) after it is stamped (so many are stamped in one window and reach Redis in the next), windows of ${b.windowMs} ms and a limit
of ${b.limit}, ${num(b.durationMs / 1000)} s per round, ${b.rounds} round(s) per library, alternating. Each admission is counted in the
window its answer names (its \`reset\`); over the limit is what windows admitted past it, summed (the token
bucket: past what it holds plus its refills over the run; GCRA has no peer). edgelimit on Redis's clock,
its default.

${table(["algorithm", "admitted (edgelimit / peer)", "over the limit (edgelimit / peer)", "windows counted"], boundaryRows)}

**Skew.** An instance on time and one off by the column's skew, ${s.callers} callers each, together on one hot
identifier for ${num(s.durationMs / 1000)} s or the skew plus three windows (so that both name some windows), windows (and refills) of ${s.windowMs} ms and a limit of ${s.limit}: admissions over the limit, as
above, per configuration and algorithm (errors: calls rejected, as the Redis clock rejects those of an
instance more than a window off with \`CLOCKSKEW\`). "a reset": the instance on time decides with leases
on a fixed window of 1,000 an hour while the skewed one resets the identifier: admitted past the limit
before and after the reset together.

${table(["configuration: algorithm", ...skews], skewRows)}

**The Redis clock's cost.** ${c.rows[0]?.callers} callers end to end, keys of their own, Redis's clock (the default) beside the
local one (\`localClock: true\`), alternating: the client's CPU and Redis's time inside commands per decision.

${table(["algorithm", "callers", "client µs (Redis clock / local)", "ratio", "Redis µs (Redis clock / local)", "ratio"], clockRows)}

**Memory.** ${m.identifiers} identifiers decided in turn every 100 ms for ${num(m.runMs / 1000)} s on a fixed window of 1 s: keys alive per
identifier ${num(m.alive.edgelimit)} (edgelimit: every window's counter outlives its end by ${num(m.lateMs / 1000)} s) and ${num(m.alive.peer)} (the peer),
${num(m.bytesPerKey)} B of \`used_memory\` per counter with its expiry: ${perIdentifier("edgelimit")} B and ${perIdentifier("peer")} B per active identifier.`;
}

/** The whole report as markdown. */
export function markdown({ meta, cpu, inMemory, e2e, lease, native, size, coldStart, firstCompile, multiRegion, faults, edges, frameworks, limits }) {
  return `# edgelimit benchmarks

${meta.mode} run of ${meta.date}: Node ${meta.node}, ${meta.cpus} × ${meta.cpuModel}; edgelimit ${meta.edgelimit} from pkg/
(wasm ${meta.wasmBytes.toLocaleString("en")} B); peer ${meta.peerName}; rate-limiter-flexible ${meta.rateLimiterFlexible}.
Rounds alternate edgelimit and the peer (${meta.rounds}); cells read "median (min–max)" over the rounds,
which follow a warm-up cell of each library (${num(meta.config.cpu.warmupMs / 1000)} s where CPU is measured). Windows of the
Redis-backed limiters: ${meta.window}. Took ${num(meta.seconds)} s. Chart: [cpu.svg](cpu.svg).

${cpuMarkdown(cpu, meta.peerName)}

${inMemoryMarkdown(inMemory)}

${e2eMarkdown(e2e, meta)}

${leaseMarkdown(lease, meta.config)}

${nativeMarkdown(native)}

${sizeMarkdown(size)}

${coldStartMarkdown(coldStart)}

${firstCompileMarkdown(firstCompile)}

${multiRegionMarkdown(multiRegion)}

${faultsMarkdown(faults)}

${edgesMarkdown(edges)}

${frameworksMarkdown(frameworks)}

${limitsMarkdown(limits, meta.config)}
`;
}
