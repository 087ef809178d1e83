// Section 5a: the size a user ships, gzipped at level 9. edgelimit: the .wasm, the generated glue, its
// JavaScript snippets and the largest per-runtime entry file of pkg/ (a user loads one): the one package,
// every feature in it (MultiRegionRatelimit too). The peer: @upstash/ratelimit +
// @upstash/redis as one minified ESM bundle, as an edge bundler makes it. Then what the .wasm holds,
// by twiggy (scripts/bootstrap.sh installs it).
import { build } from "esbuild";
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { peerName, pkgDir, root } from "./libraries.mjs";

/** edgelimit's ceiling, gzipped, for the whole package with every feature (DESIGN.md): 192 KiB. */
export const CEILING = 192 * 1024;

const gzipped = (bytes) => gzipSync(bytes, { level: 9 }).length;

/** Bundles the peer as a worker would import it: minified, one ESM file. */
export async function peerBundle({ minify }) {
  const peer = await build({
    stdin: {
      contents: 'export { Ratelimit } from "@upstash/ratelimit"; export { Redis } from "@upstash/redis";',
      resolveDir: root,
    },
    bundle: true,
    minify,
    format: "esm",
    platform: "neutral",
    mainFields: ["module", "main"],
    conditions: ["worker", "browser"],
    write: false,
    logLevel: "warning",
  });
  return peer.outputFiles[0].contents;
}

/** Rows { what, bytes, gzipped } for the peer, each part of edgelimit and edgelimit's total. */
export async function sizeSection() {
  const peer = await peerBundle({ minify: true });
  const file = (name) => readFileSync(`${pkgDir}${name}`);
  // The size is the whole package's only if every feature is in it.
  if (!String(file("edgelimit_bg.js")).includes("MultiRegionRatelimit")) {
    throw new Error("pkg/ has no MultiRegionRatelimit: rebuild it with make pkg, every feature in it");
  }
  const entries = ["index.node.js", "index.web.js", "index.workerd.js", "index.edge.js", "index.bun.js"].map(file);
  const largestEntry = entries.reduce((a, b) => (gzipped(a) >= gzipped(b) ? a : b));
  const snippets = readdirSync(`${pkgDir}snippets`, { recursive: true })
    .filter((name) => name.endsWith(".js"))
    .map((name) => [`snippets/${name}`, file(`snippets/${name}`)]);
  const parts = [
    ["edgelimit_bg.wasm", file("edgelimit_bg.wasm")],
    ["edgelimit_bg.js (glue)", file("edgelimit_bg.js")],
    ["wasm_instance.js", file("wasm_instance.js")],
    ["ratelimit.js", file("ratelimit.js")],
    ...snippets,
    ["largest entry file", largestEntry],
  ];
  const row = (what, bytes) => ({ what, bytes: bytes.length, gzipped: gzipped(bytes) });
  const ours = parts.map(([name, bytes]) => row(`edgelimit ${name}`, bytes));
  const total = {
    what: "edgelimit total",
    bytes: ours.reduce((sum, part) => sum + part.bytes, 0),
    gzipped: ours.reduce((sum, part) => sum + part.gzipped, 0),
  };
  const namesWasm = join(process.env.CARGO_TARGET_DIR ?? join(root, "target"), "pkg-names/edgelimit_bg.wasm");
  if (!existsSync(namesWasm)) throw new Error(`no ${namesWasm}: rebuild the package with make pkg`);
  return { peer: row(`peer: ${peerName}, esbuild --minify`, peer), parts: ours, total, ceiling: CEILING, wasm: wasmItems(namesWasm) };
}

/**
 * What the .wasm's bytes are, from twiggy on the same build with its names (target/pkg-names/): the
 * largest items by their own size, each with what keeps it (its immediate dominator: the one item
 * through which everything that uses it reaches it), and the largest subtrees by retained size.
 */
export function wasmItems(namesWasm, count = 15) {
  const tree = JSON.parse(execFileSync("twiggy", ["dominators", "--format", "json", namesWasm], { maxBuffer: 256 << 20, encoding: "utf8" }));
  const items = [];
  const walk = (node, keeper, depth) => {
    for (const child of node.children ?? []) {
      items.push({ name: child.name, own: child.shallow_size, retained: child.retained_size, keptBy: keeper, depth });
      // The function table keeps every function called indirectly (trait objects, closures): the
      // functions hanging from it are the roots worth naming.
      const passThrough = /^(table|elem)\[\d+\]$/.test(child.name);
      walk(child, passThrough ? keeper : child.name, depth + 1);
    }
  };
  walk(tree.items[0], "(root)", 0);
  const code = items.filter(({ name }) => !/subsection|^(table|elem)\[\d+\]$/.test(name));
  const largest = [...code].sort((a, b) => b.own - a.own).slice(0, count);
  const subtrees = code
    .filter(({ keptBy }) => keptBy === "(root)")
    .sort((a, b) => b.retained - a.retained)
    .slice(0, count);
  return { largest, subtrees };
}
