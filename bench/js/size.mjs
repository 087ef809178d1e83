// Section 5a: the size a user ships, gzipped at level 9. edgelimit: the .wasm, the generated glue, its
// JavaScript snippets and the largest per-runtime entry file of pkg/ (a user loads one): the one package,
// every feature in it (MultiRegionRatelimit too). The peer: @upstash/ratelimit +
// @upstash/redis as one minified ESM bundle, as an edge bundler makes it.
import { build } from "esbuild";
import { readdirSync, readFileSync } from "node:fs";
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
  return { peer: row(`peer: ${peerName}, esbuild --minify`, peer), parts: ours, total, ceiling: CEILING };
}
