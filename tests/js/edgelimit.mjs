// Imports the built package (pkg/) by its bare name, so that Node reads pkg/package.json and picks the
// `node` export: tests/js/node_modules/edgelimit (gitignored) links to pkg/.
import { existsSync, mkdirSync, readlinkSync, symlinkSync } from "node:fs";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL(".", import.meta.url));
const pkgDir = fileURLToPath(new URL("../../pkg/", import.meta.url));
if (!existsSync(`${pkgDir}package.json`)) {
  throw new Error("pkg/ is not built: run `bash scripts/build_pkg.sh` first");
}
mkdirSync(`${here}node_modules`, { recursive: true });
const link = `${here}node_modules/edgelimit`;
let linked = false;
try {
  linked = readlinkSync(link) === "../../../pkg";
} catch {}
if (!linked) {
  try {
    symlinkSync("../../../pkg", link, "dir");
  } catch (error) {
    // Another test file, run in parallel, made it first.
    if (error.code !== "EEXIST") throw error;
  }
}

export const { Ratelimit, Redis } = await import("edgelimit");
