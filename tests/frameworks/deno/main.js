// One server for the three variants, by path: edgelimit on Redis (/), in memory (/memory), the peer
// (/peer). `deno serve` serves a default export that has `fetch`.
import onRedis from "./redis.js";
import inMemory from "./memory.js";
import peer from "./peer.js";

const routes = { "/": onRedis, "/memory": inMemory, "/peer": peer };

export default {
  fetch(request, info) {
    const app = routes[new URL(request.url).pathname];
    return app ? app.fetch(request, info) : new Response("not found", { status: 404 });
  },
};
