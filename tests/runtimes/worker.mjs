// workerd (through miniflare), after a bundle of this file under the `workerd` condition: a module
// Worker whose fetch handler runs the scenario and hands every `pending` to `ctx.waitUntil`.
import * as edgelimit from "edgelimit";
import { scenario } from "./scenario.mjs";

export default {
  async fetch(request, env, ctx) {
    const result = await scenario(edgelimit, await request.json(), (pending) => ctx.waitUntil(pending));
    return Response.json(result);
  },
};
