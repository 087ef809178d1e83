// Minifies what wasm-bindgen generated in pkg/, after wasm-opt: the names the .wasm imports and exports
// (wasm-bindgen's are long and end in hashes, which gzip cannot shrink) and the JavaScript glue.
//
//   node scripts/minify_pkg.mjs <wasm-opt> <pkg dir> <wasm-opt's --enable-* flags...>
//
// 1. `wasm-opt --minify-imports-and-exports-and-modules` renames every import, export and import module
//    to one or two letters; the old and new names are read back from both modules, in order, and
//    checked against the mapping wasm-opt prints.
// 2. The glue's import object and every `wasm.<export>` access get the new names; each old name must be
//    found exactly where expected, or the build stops.
// 3. esbuild minifies the glue; minifying renames the exported classes, so their `name` (what
//    console.log and stack traces show) is set back from the export clause.
import { execFileSync } from "node:child_process";
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildSync } from "esbuild";

const [wasmOpt, dir, ...features] = process.argv.slice(2);
const wasmFile = join(dir, "edgelimit_bg.wasm");
const glueFile = join(dir, "edgelimit.js");
const fail = (message) => {
  console.error(`minify_pkg: ${message}`);
  process.exit(1);
};

// 1. The .wasm's interface names.
const before = new WebAssembly.Module(readFileSync(wasmFile));
const mapping = JSON.parse(
  execFileSync(wasmOpt, [
    "--minify-imports-and-exports-and-modules",
    ...features,
    wasmFile, "-o", `${wasmFile}.min`,
  ], { encoding: "utf8" }),
);
const after = new WebAssembly.Module(readFileSync(`${wasmFile}.min`));
const pairs = (list) => list.map((entry) => JSON.stringify(entry.slice(-2)));
const oldImports = WebAssembly.Module.imports(before);
const newImports = WebAssembly.Module.imports(after);
const oldExports = WebAssembly.Module.exports(before);
const newExports = WebAssembly.Module.exports(after);
const renamedImports = oldImports.map((old, i) => [old.name, newImports[i].name]);
const renamedExports = oldExports.map((old, i) => [old.name, newExports[i].name]);
if (
  JSON.stringify(pairs(mapping.imports).sort()) !== JSON.stringify(renamedImports.map((p) => JSON.stringify(p)).sort()) ||
  JSON.stringify(pairs(mapping.exports).sort()) !== JSON.stringify(renamedExports.map((p) => JSON.stringify(p)).sort())
) {
  fail("wasm-opt's mapping does not match the modules' own names");
}
const oldModules = new Set(oldImports.map((entry) => entry.module));
const newModules = new Set(newImports.map((entry) => entry.module));
if (oldModules.size !== 1 || newModules.size !== 1) fail("expected the one import module of wasm-bindgen");

// 2. The glue, as wasm-bindgen wrote it.
let glue = readFileSync(glueFile, "utf8");
const replaceOnce = (pattern, replacement, what) => {
  const matches = glue.match(new RegExp(pattern.source, "gm"))?.length ?? 0;
  if (matches !== 1) fail(`${what}: found ${matches} times in the glue, expected once`);
  glue = glue.replace(new RegExp(pattern.source, "m"), replacement);
};
const escape = (text) => text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
const [oldModule] = oldModules;
const [newModule] = newModules;
replaceOnce(new RegExp(`^(\\s+)"${escape(oldModule)}": import0,$`), `$1"${newModule}": import0,`, oldModule);
for (const [old, renamed] of renamedImports) {
  replaceOnce(new RegExp(`^(\\s+)${escape(old)}: function\\(`), `$1${renamed}: function(`, `import ${old}`);
}
for (const [old, renamed] of renamedExports) {
  glue = glue.replace(new RegExp(`\\bwasm\\.${escape(old)}\\b`, "g"), `wasm.${renamed}`);
}
const leftover = /\bwasm\.(__wbg|__wbindgen|ratelimit_|redis_)\w*/.exec(glue);
if (leftover) fail(`an export the glue uses was not renamed: ${leftover[0]}`);

// 3. esbuild, then the classes' names.
let code = buildSync({
  stdin: { contents: glue, loader: "js" },
  minify: true,
  format: "esm",
  target: "es2020",
  write: false,
  logLevel: "warning",
}).outputFiles[0].text;
const exportClause = /export\s*\{([^}]*)\};?\s*$/.exec(code);
if (!exportClause) fail("no export clause in the minified glue");
const names = exportClause[1]
  .split(",")
  .map((entry) => entry.trim().split(/\s+as\s+/))
  .filter(([, exported]) => exported === "Ratelimit" || exported === "Redis")
  .map(([local, exported]) => `Object.defineProperty(${local},"name",{value:"${exported}"});`);
if (names.length !== 2) fail("the glue does not export Ratelimit and Redis");
code = code.slice(0, exportClause.index) + names.join("") + code.slice(exportClause.index);

writeFileSync(glueFile, code);
renameSync(`${wasmFile}.min`, wasmFile);
