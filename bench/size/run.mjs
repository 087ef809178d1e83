// The size a user ships: edgelimit's npm package (pkg/) beside @upstash/ratelimit + @upstash/redis as
// one minified ESM bundle, both gzipped at level 9 in the same run. Prints a Markdown table, with the
// .wasm of the two size probes of bench/size/probes.sh below it when they are built.
//
//   node bench/size/run.mjs        (after `make pkg`, and bench/size/probes.sh for the probes)
import { build } from "esbuild";
import { existsSync, readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../../", import.meta.url));
const gzipped = (bytes) => gzipSync(bytes, { level: 9 }).length;
const version = (name) =>
  JSON.parse(readFileSync(`${root}node_modules/${name}/package.json`, "utf8")).version;

// What an edge bundler makes of the peer: everything a worker imports, minified, one ESM file.
const peer = await build({
  stdin: {
    contents: 'export { Ratelimit } from "@upstash/ratelimit"; export { Redis } from "@upstash/redis";',
    resolveDir: root,
  },
  bundle: true,
  minify: true,
  format: "esm",
  platform: "neutral",
  mainFields: ["module", "main"],
  conditions: ["worker", "browser"],
  write: false,
  logLevel: "warning",
});
const peerBytes = peer.outputFiles[0].contents;

// edgelimit: the .wasm, the generated glue and the largest of the per-runtime entry files (a user
// loads one of them).
const file = (name) => readFileSync(`${root}pkg/${name}`);
const entries = ["index.node.js", "index.web.js", "index.workerd.js"].map(file);
const largestEntry = entries.reduce((a, b) => (gzipped(a) >= gzipped(b) ? a : b));
const parts = [
  ["edgelimit_bg.wasm", file("edgelimit_bg.wasm")],
  ["edgelimit.js (glue)", file("edgelimit.js")],
  ["largest entry file", largestEntry],
];
const ours = parts.reduce((sum, [, bytes]) => sum + gzipped(bytes), 0);
const theirs = gzipped(peerBytes);

const row = (name, raw, gz) =>
  `| ${name} | ${raw.toLocaleString("en")} | ${gz.toLocaleString("en")} | ${(gz / theirs).toFixed(2)}× |`;
console.log("| what | bytes | gzipped (level 9) | × peer |");
console.log("|---|---:|---:|---:|");
console.log(
  row(
    `peer: @upstash/ratelimit ${version("@upstash/ratelimit")} + @upstash/redis ${version("@upstash/redis")}, esbuild --minify`,
    peerBytes.length,
    theirs,
  ),
);
for (const [name, bytes] of parts) console.log(row(`edgelimit ${name}`, bytes.length, gzipped(bytes)));
console.log(row("**edgelimit total**", parts.reduce((s, [, b]) => s + b.length, 0), ours));

// What any Rust package of this shape pays, and what edgelimit's core pays without its JS API.
const probes = [
  ["floor.wasm", "probe: a wasm-bindgen package doing one fetch round trip, nothing else (bench/size/floor)"],
  ["core.wasm", "probe: edgelimit's core alone, src/wasm/ replaced by bench/size/core_probe.rs"],
];
for (const [name, what] of probes) {
  const path = `${root}target/bench/probes/${name}`;
  if (existsSync(path)) {
    const bytes = readFileSync(path);
    console.log(row(what, bytes.length, gzipped(bytes)));
  }
}
