// Imports the built package (pkg/) by its bare name, so that Node reads pkg/package.json and picks the
// `node` export: tests/js/node_modules/edgelimit links to pkg/.
import { fileURLToPath } from "node:url";
import { linkPackage } from "../../scripts/link_pkg.mjs";

linkPackage(fileURLToPath(new URL(".", import.meta.url)));

export const { MultiRegionRatelimit, Ratelimit, Redis, rateLimitHeaders } = await import("edgelimit");
