// One server for the three variants, by path: edgelimit on Redis (/), in memory (/memory), the peer
// (/peer). Bun serves a default export that has `fetch`, on PORT.
import onRedis from "./redis.js";
import inMemory from "./memory.js";
import peer from "./peer.js";

const routes = { "/": onRedis, "/memory": inMemory, "/peer": peer };

export default {
  port: Number(process.env.PORT),
  hostname: "127.0.0.1",
  fetch(request, server) {
    const app = routes[new URL(request.url).pathname];
    return app ? app.fetch(request, server) : new Response("not found", { status: 404 });
  },
};
