// Chromium: loaded by browser.html, which maps `edgelimit` to pkg/index.web.js. Runs the scenario with
// the options the test server gives and posts the outcome back to it.
import * as edgelimit from "edgelimit";
import { scenario } from "./scenario.mjs";

let outcome;
try {
  const options = await (await fetch("/options")).json();
  outcome = { entry: import.meta.resolve("edgelimit"), result: await scenario(edgelimit, options) };
} catch (error) {
  outcome = { error: String(error?.stack ?? error) };
}
await fetch("/result", { method: "POST", body: JSON.stringify(outcome) });
