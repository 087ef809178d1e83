// Section 6: multi-region over-admission. Three regions (separate redis-servers behind one gateway,
// scripts/regions.mjs); clients spread over three locations, each reaching the regions through TCP
// proxies that delay every chunk by a one-way latency of 5, 40 or 120 ms (its nearest region 5 ms, the
// next 40, the farthest 120). Together they send twice the limit within one window, each client one
// request after another, leaving `pending` to run in the background as `waitUntil` does. Counted, for
// edgelimit and the peer in the same run: requests admitted in all (the limit's excess is the
// over-admission), and, once every merge has settled, what one more request per client is admitted.
// A count, not a timing: nothing here asserts.
import { connect, createServer } from "node:net";
import { MultiRegionRatelimit as PeerMultiRegionRatelimit } from "@upstash/ratelimit";
import { Redis as PeerRedis } from "@upstash/redis";
import { startRegions } from "../../scripts/regions.mjs";
import { MultiRegionRatelimit, Ratelimit, Redis, window } from "./libraries.mjs";

/**
 * The algorithms, as [name, edgelimit limiter, peer limiter or null] for a limit: the token bucket (its
 * whole bucket refilled over the window) and GCRA have no peer across regions.
 */
const algorithms = [
  ["fixed window", (n) => MultiRegionRatelimit.fixedWindow(n, window), (n) => PeerMultiRegionRatelimit.fixedWindow(n, window)],
  ["sliding window", (n) => MultiRegionRatelimit.slidingWindow(n, window), (n) => PeerMultiRegionRatelimit.slidingWindow(n, window)],
  ["token bucket", (n) => Ratelimit.tokenBucket(n, window, n), null],
  ["GCRA", (n) => Ratelimit.gcra(n, window), null],
];

/** A TCP proxy to `port` on loopback delaying each chunk, both ways, by `delayMs`; its URL and close(). */
async function delayingProxy(port, delayMs) {
  const sockets = new Set();
  const server = createServer((client) => {
    const upstream = connect(port, "127.0.0.1");
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
      socket.on("error", () => {});
    }
    const relay = (from, to) => {
      from.on("data", (chunk) => setTimeout(() => to.writable && to.write(chunk), delayMs));
      from.on("end", () => setTimeout(() => to.end(), delayMs));
    };
    relay(client, upstream);
    relay(upstream, client);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(resolve);
      }),
  };
}

/** Runs the section: per algorithm, the counts of each library over `rounds` rounds (the peer's null where it has no such limiter). */
export async function multiRegionSection({ clients, limit, delaysMs, gapMs, rounds, log }) {
  const regions = await startRegions(3);
  const gatewayPort = Number(new URL(regions.url).port);
  const proxies = await Promise.all(delaysMs.map((delay) => delayingProxy(gatewayPort, delay)));
  // Client `c` sits at location c % 3: region r is `(r - location) mod 3` steps away.
  const route = (client, region) => ({ url: proxies[(region - (client % 3) + 3) % 3].url, token: regions.tokens[region] });
  const libraries = {
    edgelimit: (limiter, prefix, client) =>
      new MultiRegionRatelimit({
        redis: [0, 1, 2].map((region) => new Redis(route(client, region))),
        limiter,
        prefix,
        ephemeralCache: false,
      }),
    peer: (limiter, prefix, client) =>
      new PeerMultiRegionRatelimit({
        redis: [0, 1, 2].map((region) => new PeerRedis({ ...route(client, region), enableTelemetry: false })),
        limiter,
        prefix,
        analytics: false,
      }),
  };
  const rows = [];
  try {
    for (const [name, ourLimiter, peerLimiter] of algorithms) {
      const limiters = { edgelimit: ourLimiter, peer: peerLimiter };
      const counts = { edgelimit: [], peer: [] };
      for (let round = 0; round < rounds; round++) {
        for (const [lib, make] of Object.entries(libraries)) {
          if (!limiters[lib]) continue;
          log(`multi-region: ${name}, ${lib}, round ${round + 1}`);
          const prefix = `bench-mr-${lib}-${name.replace(" ", "-")}-${Date.now()}-${round}`;
          const made = Array.from({ length: clients }, (_, client) => make(limiters[lib](limit), prefix, client));
          counts[lib].push(await burst(made, limit, gapMs));
        }
      }
      const sum = (lib, field) => counts[lib].reduce((total, count) => total + count[field], 0);
      const totals = (lib) => ({
        sent: sum(lib, "sent"),
        admitted: sum(lib, "admitted"),
        excess: sum(lib, "admitted") - limit * rounds,
        admittedAfterMerge: sum(lib, "admittedAfterMerge"),
        perRound: counts[lib].map((count) => count.admitted),
      });
      rows.push({ algorithm: name, edgelimit: totals("edgelimit"), peer: peerLimiter ? totals("peer") : null });
    }
  } finally {
    await Promise.all(proxies.map((proxy) => proxy.close()));
    await regions.close();
  }
  return { clients, limit, delaysMs, gapMs, rounds, rows };
}

/**
 * Twice `limit` requests from `limiters` (one per client, each sending in turn with `gapMs` between its
 * requests, pending left running), then, once every pending has settled, one more per client.
 */
async function burst(limiters, limit, gapMs) {
  const perClient = Math.ceil((2 * limit) / limiters.length);
  const pendings = [];
  const answers = await Promise.all(
    limiters.map(async (limiter) => {
      const mine = [];
      for (let n = 0; n < perClient; n++) {
        const answer = await limiter.limit("user");
        pendings.push(answer.pending);
        mine.push(answer.success);
        await new Promise((resolve) => setTimeout(resolve, gapMs));
      }
      return mine;
    }),
  );
  await Promise.all(pendings);
  const after = await Promise.all(
    limiters.map(async (limiter) => {
      const answer = await limiter.limit("user");
      await answer.pending;
      return answer.success;
    }),
  );
  const flat = answers.flat();
  return { sent: flat.length, admitted: flat.filter(Boolean).length, admittedAfterMerge: after.filter(Boolean).length };
}
