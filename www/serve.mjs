// Serves the playground: www/ at /, the built package (pkg/) at /pkg/, and /config.json, which tells
// the page where Redis and the regions are. `make www` runs it beside a redis-server and the gateway:
//
//   bash scripts/with_gateway.sh node www/serve.mjs [port]     (default 8080; 0 picks a free one)
//
// With EDGELIMIT_TEST_URL and EDGELIMIT_TEST_TOKEN set (scripts/with_gateway.sh sets them) the page
// offers the Redis store through that gateway; without them, only the in-memory store. With
// EDGELIMIT_GATEWAY_BIN set too, it starts three regions (scripts/regions.mjs: a redis-server each
// behind a gateway of their own) for the page's multi-region view, and stops them when it stops
// (Ctrl-C, SIGTERM). Only files inside www/ and pkg/ are served, and
// /config.json (it holds the tokens) only to loopback clients that name a loopback host.
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { isIP } from "node:net";
import { extname, join, normalize, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { startRegions } from "../scripts/regions.mjs";

const wwwDir = fileURLToPath(new URL(".", import.meta.url));
/** URL path prefixes served from a folder other than www/. */
const MOUNTS = [["/pkg/", fileURLToPath(new URL("../pkg/", import.meta.url))]];
/** How many regions `make www` starts for the multi-region view. */
const REGIONS = 3;
const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript",
  ".mjs": "text/javascript",
  ".css": "text/css",
  ".wasm": "application/wasm",
  ".json": "application/json",
};

/** The file a URL path names, or null when it is outside www/ and the mounted folders. */
function fileFor(path) {
  const mount = MOUNTS.find(([prefix]) => path.startsWith(prefix));
  const [dir, rest] = mount ? [mount[1], path.slice(mount[0].length)] : [wwwDir, path.slice(1) || "index.html"];
  const file = normalize(join(dir, decodeURIComponent(rest)));
  return file.startsWith(dir) && !file.endsWith(sep) ? file : null;
}

/** Whether an address (`127.0.0.1`, `::ffff:127.0.0.1`, `::1`) is the loopback interface. */
function isLoopbackAddress(address = "") {
  const plain = address.replace(/^::ffff:/, "");
  return plain === "::1" || (isIP(plain) === 4 && plain.startsWith("127."));
}

/**
 * Whether a request comes from this machine and names it by a loopback host, so that a page of another
 * site cannot read the token through a DNS name rebound to 127.0.0.1.
 */
function isLoopbackRequest(request) {
  const host = (request.headers.host ?? "").replace(/:\d+$/, "").replace(/^\[(.*)\]$/, "$1");
  return isLoopbackAddress(request.socket.remoteAddress) && (host === "localhost" || isLoopbackAddress(host));
}

/**
 * Starts the server on `port` of `host`; resolves to it once it listens. `redis` (`{ url, token }` of an
 * Upstash-compatible REST server, or null) and `regions` (`{ url, tokens }`: one gateway, one token per
 * region, or null) are what /config.json hands the page.
 */
export function serve({ port = 8080, host = "127.0.0.1", redis = null, regions = null } = {}) {
  const config = JSON.stringify({
    redis: redis && { url: redis.url, token: redis.token },
    regions: regions && { url: regions.url, tokens: [...regions.tokens] },
  });
  const server = createServer(async (request, response) => {
    const path = new URL(request.url, "http://localhost").pathname;
    if (path === "/config.json") {
      const allowed = isLoopbackRequest(request);
      response.writeHead(allowed ? 200 : 403, { "content-type": TYPES[".json"], "cache-control": "no-store" });
      response.end(allowed ? config : JSON.stringify({ error: "/config.json is served to loopback clients only" }));
      return;
    }
    const file = fileFor(path);
    try {
      if (!file || !TYPES[extname(file)]) throw Object.assign(new Error("not served"), { code: "ENOENT" });
      const body = await readFile(file);
      response.writeHead(200, { "content-type": TYPES[extname(file)], "cache-control": "no-store" });
      response.end(body);
    } catch (error) {
      response.writeHead(error.code === "ENOENT" || error.code === "EISDIR" ? 404 : 500);
      response.end();
    }
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve(server));
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === normalize(process.argv[1])) {
  const { EDGELIMIT_TEST_URL: url, EDGELIMIT_TEST_TOKEN: token, EDGELIMIT_GATEWAY_BIN: gatewayBin } = process.env;
  const redis = url && token ? { url, token } : null;
  const regions = gatewayBin ? await startRegions(REGIONS) : null;
  let stopping = false;
  const stop = async (signal) => {
    if (stopping) return;
    stopping = true;
    await regions?.close();
    process.kill(process.pid, signal);
  };
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.once(signal, () => stop(signal));
  const server = await serve({ port: Number(process.argv[2] ?? process.env.PORT ?? 8080), redis, regions });
  console.log(`edgelimit playground: http://127.0.0.1:${server.address().port}/ (Ctrl-C stops it)`);
  console.log(redis ? `stores: in the page, or Redis through the gateway at ${url}` : "store: in the page only (no gateway: run `make www` for Redis)");
  console.log(regions ? `regions: ${REGIONS} redis-servers behind the gateway at ${regions.url}` : "regions: none (run `make www` for the multi-region view)");
}
