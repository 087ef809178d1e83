// A Worker for tests/js/lease_runtimes.test.mjs, bundled under the `workerd` condition: one Ratelimit
// with leases per isolate, kept between requests as a Worker keeps module state. Each request makes
// `decisions` decisions on one identifier (every `pending` to `ctx.waitUntil`), then, when asked,
// hands `returnLeases()` to `ctx.waitUntil`; it answers how many were admitted and how many HTTP
// requests the package sent meanwhile.
import { Ratelimit, Redis } from "edgelimit";

let ratelimit;
let requests = 0;

export default {
  async fetch(request, env, ctx) {
    const { url, token, prefix, decisions, returnLeases } = await request.json();
    ratelimit ??= new Ratelimit({
      redis: new Redis({ url, token, fetch: (target, init) => (requests++, fetch(target, init)) }),
      limiter: Ratelimit.fixedWindow(1_000, "1 d"),
      prefix,
      lease: { tokens: 100, ttl: "1 m" },
    });
    const before = requests;
    let admitted = 0;
    for (let i = 0; i < decisions; i++) {
      const { success, pending } = await ratelimit.limit("hot");
      ctx.waitUntil(pending);
      if (success) admitted++;
    }
    if (returnLeases) ctx.waitUntil(ratelimit.returnLeases());
    return Response.json({ admitted, requests: requests - before, runtime: navigator.userAgent });
  },
};
