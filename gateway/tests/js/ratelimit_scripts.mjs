// Prints, as JSON, the Lua scripts of the installed @upstash/ratelimit: `{name, text, hash}` each,
// `hash` being the SHA-1 the SDK ships for EVALSHA (null for a script it only sends with EVAL).
// The texts are read from the SDK's own module, run as it is, not parsed out of its source.
import fs from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const main = require.resolve("@upstash/ratelimit");
const source = fs.readFileSync(main, "utf8");
const module = { exports: {} };
const { SCRIPTS, RESET_SCRIPT, checkDenyListScript } = new Function(
  "require",
  "module",
  "exports",
  `${source}\n;return { SCRIPTS, RESET_SCRIPT, checkDenyListScript };`,
)(require, module, module.exports);

const scripts = [];
for (const [region, algorithms] of Object.entries(SCRIPTS)) {
  for (const [algorithm, calls] of Object.entries(algorithms)) {
    for (const [call, { script, hash }] of Object.entries(calls)) {
      scripts.push({ name: `${region}.${algorithm}.${call}`, text: script, hash });
    }
  }
}
scripts.push({ name: "reset", text: RESET_SCRIPT.script, hash: RESET_SCRIPT.hash });
scripts.push({ name: "checkDenyList", text: checkDenyListScript, hash: null });
const { version } = require("@upstash/ratelimit/package.json");
console.log(JSON.stringify({ version, scripts }));
