// One Worker serving the three variants by path: edgelimit on Redis (/), in memory (/memory) and the
// peer (/peer). Each variant is a Worker of its own, as a user would write it.
import onRedis from "./redis.js";
import inMemory from "./memory.js";
import peer from "./peer.js";

const routes = { "/": onRedis, "/memory": inMemory, "/peer": peer };

export default {
  fetch(request, env, ctx) {
    const worker = routes[new URL(request.url).pathname];
    return worker ? worker.fetch(request, env, ctx) : new Response("not found", { status: 404 });
  },
};
