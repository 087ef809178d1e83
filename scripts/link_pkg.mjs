// Makes the built package (pkg/) importable by its bare name "edgelimit" from a folder, as a user's
// project imports it: <dir>/node_modules/edgelimit (gitignored) becomes a link to pkg/, so Node, Deno
// and esbuild read pkg/package.json and pick the export of their runtime.
import { existsSync, mkdirSync, readlinkSync, rmSync, symlinkSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const pkgDir = fileURLToPath(new URL("../pkg/", import.meta.url));

/** Links `<dir>/node_modules/edgelimit` to pkg/; throws if pkg/ is not built. */
export function linkPackage(dir) {
  if (!existsSync(join(pkgDir, "package.json"))) {
    throw new Error("pkg/ is not built: run `make pkg` (bash scripts/build_pkg.sh) first");
  }
  const modules = join(dir, "node_modules");
  const link = join(modules, "edgelimit");
  const target = relative(modules, pkgDir);
  mkdirSync(modules, { recursive: true });
  let existing = null;
  try {
    existing = readlinkSync(link);
  } catch (error) {
    if (error.code !== "ENOENT") existing = error.code; // there, but not a link
  }
  if (existing === target) return;
  // A link to elsewhere (or a file) is replaced; a missing one is made.
  if (existing !== null) rmSync(link, { force: true });
  try {
    symlinkSync(target, link, "dir");
  } catch (error) {
    // Another test file, run in parallel, made it first.
    if (error.code !== "EEXIST") throw error;
  }
}
