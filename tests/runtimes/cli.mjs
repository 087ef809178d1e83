// Node and Deno: `edgelimit` resolves through node_modules/edgelimit (a link to pkg/, made by the test)
// and the package's `exports`, under the runtime's own condition (`node`, or `deno`).
//
//   node cli.mjs '{"url":…,"token":…,"prefix":…}'    deno run … cli.mjs '{…}'
//
// Prints one line of JSON: the entry the runtime resolved and the scenario's result.
import * as edgelimit from "edgelimit";
import { scenario } from "./scenario.mjs";

const args = typeof Deno === "object" ? Deno.args : process.argv.slice(2);
const result = await scenario(edgelimit, JSON.parse(args[0]));
console.log(JSON.stringify({ entry: import.meta.resolve("edgelimit"), result }));
