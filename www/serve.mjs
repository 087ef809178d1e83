// Serves the playground: www/ at /, the built package (pkg/) at /pkg/. `make www` runs it:
//
//   node www/serve.mjs [port]     (default 8080; 0 picks a free one)
//
// Only files inside those two folders are served; the page needs nothing else (no Redis: it limits in
// memory, inside the browser).
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { extname, join, normalize, sep } from "node:path";
import { fileURLToPath } from "node:url";

const wwwDir = fileURLToPath(new URL(".", import.meta.url));
const pkgDir = fileURLToPath(new URL("../pkg/", import.meta.url));
const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript",
  ".mjs": "text/javascript",
  ".css": "text/css",
  ".wasm": "application/wasm",
  ".json": "application/json",
};

/** The file a URL path names, or null when it is outside www/ and pkg/. */
function fileFor(path) {
  const [dir, rest] = path.startsWith("/pkg/") ? [pkgDir, path.slice(5)] : [wwwDir, path.slice(1) || "index.html"];
  const file = normalize(join(dir, decodeURIComponent(rest)));
  return file.startsWith(dir) && !file.endsWith(sep) ? file : null;
}

/** Starts the server on `port` of 127.0.0.1; resolves to it once it listens. */
export function serve(port = 8080, host = "127.0.0.1") {
  const server = createServer(async (request, response) => {
    const file = fileFor(new URL(request.url, "http://localhost").pathname);
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
  const server = await serve(Number(process.argv[2] ?? process.env.PORT ?? 8080));
  console.log(`edgelimit playground: http://127.0.0.1:${server.address().port}/ (Ctrl-C stops it)`);
}
