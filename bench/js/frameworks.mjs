// Section 9: what a user of each toolchain ships and the first request their server answers, edgelimit
// beside the peer, on the apps of tests/frameworks/ (installed as its tests install them, edgelimit from
// its tarball):
//   Workers      `wrangler deploy --dry-run` of a Worker using each library alone (workers/src/redis.js,
//                workers/src/peer.js): the upload, gzipped; and `wrangler dev` of each, the first
//                request (one decision through the gateway) once the port accepts connections;
//   Next.js 16   `next build` (Turbopack, the default): the edge functions /edge and /peer/edge as the
//                build lists them (their scripts and WebAssembly), gzipped; and after `next start`, the
//                first request to each (a 404 first warms the server without either library);
//   Vite         `vite build` of a page importing each library alone: its assets, gzipped.
// Rounds alternate which library goes first. Nothing is asserted of the numbers.
import { readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { gzipSync } from "node:zlib";
import { NODE22_BIN, exec, freePort, prepareApp, startServer, withPath } from "../../tests/frameworks/harness.mjs";
import { summarise } from "./measure.mjs";

const gzipped = (files) => files.reduce((sum, file) => sum + gzipSync(readFileSync(file), { level: 9 }).length, 0);

/** Rows `{ toolchain, what, unit, edgelimit, peer, ratio }` for the report. */
export async function frameworksSection({ url, token, rounds, log }) {
  const redisEnv = { UPSTASH_REDIS_REST_URL: url, UPSTASH_REDIS_REST_TOKEN: token };
  const rows = [];
  rows.push(...(await workers({ redisEnv, rounds, log })));
  rows.push(...(await next({ redisEnv, rounds, log })));
  rows.push(await vite({ log }));
  for (const row of rows) row.ratio = row.edgelimit.median / row.peer.median;
  return { rounds, rows };
}

/** The Worker of each library: its gzipped upload and its first request under `wrangler dev`. */
async function workers({ redisEnv, rounds, log }) {
  const env = withPath(NODE22_BIN, { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "1" });
  log("frameworks: preparing the Worker (wrangler)");
  const dir = await prepareApp("bench-workers", { source: "workers", env });
  const scripts = { edgelimit: "src/redis.js", peer: "src/peer.js" };
  const upload = {};
  for (const [library, script] of Object.entries(scripts)) {
    const outdir = join(dir, `dist-${library}`);
    await exec("npx", ["wrangler", "deploy", "--dry-run", "--outdir", outdir, script], { cwd: dir, env });
    upload[library] = summarise([{ bytes: gzipped(readdirSync(outdir).filter((file) => !file.endsWith(".map")).map((file) => join(outdir, file))) }]);
  }
  const first = { edgelimit: [], peer: [] };
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 ? ["peer", "edgelimit"] : ["edgelimit", "peer"];
    for (const library of order) {
      const port = await freePort();
      const vars = Object.entries(redisEnv).flatMap(([name, value]) => ["--var", `${name}:${value}`]);
      const server = await startWhenListening("npx", ["wrangler", "dev", scripts[library], "--port", String(port), "--ip", "127.0.0.1", ...vars], { cwd: dir, env, port });
      try {
        first[library].push({ ms: await timedRequest(`http://127.0.0.1:${port}/`, { "cf-connecting-ip": `bench-${Date.now()}` }) });
      } finally {
        await server.stop();
      }
    }
  }
  log("frameworks: Worker measured");
  return [
    { toolchain: "Cloudflare Worker (wrangler 4)", what: "upload, gzipped", unit: "KiB", edgelimit: kib(upload.edgelimit.bytes), peer: kib(upload.peer.bytes) },
    { toolchain: "Cloudflare Worker (wrangler 4)", what: "first request after `wrangler dev` listens", unit: "ms", edgelimit: summarise(first.edgelimit).ms, peer: summarise(first.peer).ms },
  ];
}

/** Next.js 16 with Turbopack: the gzipped edge function of each library and its first request. */
async function next({ redisEnv, rounds, log }) {
  const env = { ...process.env, ...redisEnv, NEXT_TELEMETRY_DISABLED: "1" };
  log("frameworks: building the Next.js 16 app (Turbopack)");
  const dir = await prepareApp("bench-next16", { source: "next", lock: "next/16", env });
  rmSync(join(dir, "proxy.ts"));
  await exec("npx", ["next", "build"], { cwd: dir, env });
  const manifest = JSON.parse(readFileSync(join(dir, ".next/server/middleware-manifest.json"), "utf8"));
  const functionBytes = (route) => {
    const { files, wasm = [] } = manifest.functions[route];
    return summarise([{ bytes: gzipped([...files, ...wasm.map(({ filePath }) => filePath)].map((file) => join(dir, ".next", file))) }]);
  };
  const size = { edgelimit: functionBytes("/edge/route"), peer: functionBytes("/peer/edge/route") };
  const paths = { edgelimit: "/edge", peer: "/peer/edge" };
  const first = { edgelimit: [], peer: [] };
  for (let round = 0; round < rounds; round++) {
    const port = await freePort();
    const server = await startWhenListening("npx", ["next", "start", "--port", String(port), "--hostname", "127.0.0.1"], { cwd: dir, env, port });
    try {
      await fetch(`http://127.0.0.1:${port}/warm-up-without-either-library`).then((response) => response.arrayBuffer());
      const order = round % 2 ? ["peer", "edgelimit"] : ["edgelimit", "peer"];
      for (const library of order) {
        first[library].push({ ms: await timedRequest(`http://127.0.0.1:${port}${paths[library]}`, { "x-forwarded-for": `bench-${Date.now()}` }) });
      }
    } finally {
      await server.stop();
    }
  }
  log("frameworks: Next.js measured");
  return [
    { toolchain: "Next.js 16 (Turbopack)", what: "edge function, gzipped", unit: "KiB", edgelimit: kib(size.edgelimit.bytes), peer: kib(size.peer.bytes) },
    { toolchain: "Next.js 16 (Turbopack)", what: "first request to the edge route after `next start`", unit: "ms", edgelimit: summarise(first.edgelimit).ms, peer: summarise(first.peer).ms },
  ];
}

/** Vite: the gzipped assets of a page importing each library alone. */
async function vite({ log }) {
  log("frameworks: building the Vite pages");
  const dir = await prepareApp("bench-vite", { source: "vite" });
  const pages = {
    edgelimit: 'import { tryOnce } from "./limit.js";\nwindow.tryOnce = tryOnce;\n',
    peer:
      'import { Ratelimit } from "@upstash/ratelimit";\nimport { Redis } from "@upstash/redis";\n' +
      'window.ratelimit = new Ratelimit({ redis: new Redis({ url: location.origin, token: "t" }), limiter: Ratelimit.fixedWindow(5, "1 d") });\n',
  };
  const bytes = {};
  for (const [library, code] of Object.entries(pages)) {
    writeFileSync(join(dir, `${library}.js`), code);
    writeFileSync(join(dir, "index.html"), `<!doctype html><script type="module" src="/${library}.js"></script>\n`);
    const outDir = `dist-${library}`;
    await exec("npx", ["vite", "build", "--outDir", outDir], { cwd: dir });
    const assets = join(dir, outDir, "assets");
    bytes[library] = summarise([{ bytes: gzipped(readdirSync(assets).map((file) => join(assets, file))) }]);
  }
  return { toolchain: "Vite 8", what: "a page's assets, gzipped", unit: "KiB", edgelimit: kib(bytes.edgelimit.bytes), peer: kib(bytes.peer.bytes) };
}

const kib = ({ median, min, max, rounds }) => ({ median: median / 1024, min: min / 1024, max: max / 1024, rounds });

/** Starts a server and resolves once `port` accepts connections (no request sent). */
async function startWhenListening(command, args, { cwd, env, port }) {
  return startServer(command, args, { cwd, env, ready: () => accepts(port) });
}

/** Whether a TCP connection to 127.0.0.1:`port` succeeds. */
function accepts(port) {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => (socket.destroy(), resolve(true)));
    socket.once("error", () => resolve(false));
  });
}

/** Milliseconds from sending a GET to `url` to its whole body. */
async function timedRequest(url, headers) {
  const start = performance.now();
  const response = await fetch(url, { headers });
  await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`${url} answered ${response.status}`);
  return performance.now() - start;
}

/** The section as markdown. */
export function frameworksMarkdown({ rounds, rows }) {
  const cell = ({ median, min, max, rounds: n }, unit) => `${format(median)} ${unit}${n > 1 ? ` (${format(min)}–${format(max)})` : ""}`;
  const body = rows.map(({ toolchain, what, unit, edgelimit, peer, ratio }) => `| ${toolchain} | ${what} | ${cell(edgelimit, unit)} | ${cell(peer, unit)} | **${ratio.toFixed(2)}×** |`);
  return `## 9. Frameworks: what users ship, and their first request

The apps of tests/frameworks/ with each library alone (edgelimit from its \`npm pack\` tarball); ${rounds} round(s) of
each first request, alternating which library goes first. A Worker's upload and a Next.js edge function are
what the platform receives; the first request is one decision through the gateway, timed from the moment the
server accepts connections (Next.js: after a 404 has warmed the server), so it includes loading the library.

| toolchain | measured | edgelimit | peer | edgelimit / peer |
|---|---|---:|---:|---:|
${body.join("\n")}`;
}

const format = (value) => value.toLocaleString("en", { maximumFractionDigits: value >= 100 ? 0 : 1 });
