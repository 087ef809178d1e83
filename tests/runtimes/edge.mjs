// Vercel's edge-runtime, after a bundle of this file under the `edge-light` condition into a script (the
// runtime evaluates scripts, not modules): a fetch event handler that runs the scenario and hands every
// `pending` to `event.waitUntil`.
import * as edgelimit from "edgelimit";
import { scenario } from "./scenario.mjs";

addEventListener("fetch", (event) => {
  event.respondWith(
    (async () => {
      const result = await scenario(edgelimit, await event.request.json(), (pending) => event.waitUntil(pending));
      return new Response(JSON.stringify(result), { headers: { "content-type": "application/json" } });
    })(),
  );
});
