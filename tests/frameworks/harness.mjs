// What every framework test does with an app of tests/frameworks/: copy it into a folder of its own
// outside this repository (as a user's project stands alone: Next.js takes the folder of the nearest
// lock file above an app for its workspace root), install its locked dependencies and edgelimit from the
// `npm pack` tarball of pkg/ (a copy, as a user gets it, never a link), run its build and its server,
// send requests, and read Redis behind the gateway.
// The bench (bench/js/frameworks.mjs) measures the same apps through these functions.
import { execFile, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

export const root = fileURLToPath(new URL("../../", import.meta.url));
const frameworksDir = join(root, "tests/frameworks");
const cache = join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "edgelimit");
/** Where the apps are built, each in a folder kept between runs for its node_modules. */
const buildRoot = join(cache, "frameworks");

/**
 * The Node.js 22 that scripts/bootstrap.sh installs for the toolchains that need it (wrangler 4 wants
 * 22.12 or later); the machine's own Node runs the rest.
 */
export const NODE22_BIN = join(cache, "node-22.23.5/bin");

const run = promisify(execFile);

/** Runs `command` to completion in `cwd`; its stdout. Throws with the output on failure. */
export async function exec(command, args, { cwd, env = process.env, timeout = 600_000 } = {}) {
  try {
    const { stdout } = await run(command, args, { cwd, env, timeout, maxBuffer: 64 << 20 });
    return stdout;
  } catch (error) {
    throw new Error(`${command} ${args.join(" ")} failed in ${cwd}:\n${error.stdout ?? ""}\n${error.stderr ?? ""}`.trimEnd(), { cause: error });
  }
}

/** The environment with `bin` (a folder of executables) first on PATH. */
export function withPath(bin, env = process.env) {
  return { ...env, PATH: `${bin}:${env.PATH}` };
}

let tarball;

/** The `npm pack` tarball of pkg/, made once per process. */
export async function packageTarball() {
  if (!tarball) {
    if (!existsSync(join(root, "pkg/package.json"))) throw new Error("pkg/ is not built: run `make pkg` first");
    const destination = join(buildRoot, `tarball-${process.pid}`);
    rmSync(destination, { recursive: true, force: true });
    mkdirSync(destination, { recursive: true });
    tarball = run("npm", ["pack", join(root, "pkg"), "--pack-destination", destination, "--json"], { cwd: root }).then(
      ({ stdout }) => join(destination, JSON.parse(stdout)[0].filename),
    );
  }
  return tarball;
}

/**
 * Prepares an app of tests/frameworks/ in the folder `build` of the build root: its sources copied (the files
 * of `source`, then those of `lock`, its package.json and package-lock.json), `npm ci` when the lock
 * changed since the last run, then edgelimit's tarball installed. `env` runs npm (a newer Node on PATH
 * where the app needs one). Returns the app's folder.
 */
export async function prepareApp(build, { source, lock = source, env = process.env }) {
  const dir = join(buildRoot, build);
  mkdirSync(dir, { recursive: true });
  const lockFile = readFileSync(join(frameworksDir, lock, "package-lock.json"));
  const stamp = join(dir, "node_modules/.edgelimit-lock-sha1");
  const installed = existsSync(stamp) && readFileSync(stamp, "utf8") === sha1(lockFile);
  // Sources are copied afresh (what a previous run built or generated goes); node_modules stays.
  for (const entry of readdirSync(dir)) if (entry !== "node_modules") rmSync(join(dir, entry), { recursive: true, force: true });
  copySources(join(frameworksDir, source), dir);
  if (lock !== source) copySources(join(frameworksDir, lock), dir);
  if (!installed) {
    await exec("npm", ["ci", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: dir, env });
    writeFileSync(stamp, sha1(lockFile));
  }
  await exec("npm", ["install", "--no-save", "--no-audit", "--no-fund", "--loglevel=error", await packageTarball()], { cwd: dir, env });
  return dir;
}

/** Copies the files of `from` into `to`, but not what installs or builds leave (or other lock folders). */
function copySources(from, to) {
  for (const entry of readdirSync(from)) {
    const path = join(from, entry);
    if (entry === "node_modules" || (statSync(path).isDirectory() && /^\d+$/.test(entry))) continue;
    cpSync(path, join(to, entry), { recursive: true });
  }
}

const sha1 = (bytes) => createHash("sha1").update(bytes).digest("hex");

/** A free loopback port. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts a server (`command args` in `cwd`, its own process group) and waits until `url` answers, or
 * until `ready()` resolves true. Returns `{ output, stop }`; `stop()` ends the whole group and is safe to
 * call twice.
 */
export async function startServer(command, args, { cwd, env = process.env, url, ready = () => answers(url), timeout = 120_000 }) {
  const child = spawn(command, args, { cwd, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (chunk) => (output += chunk));
  child.stderr.on("data", (chunk) => (output += chunk));
  let done = false;
  const exited = new Promise((resolve) => child.on("exit", resolve)).then(() => (done = true));
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    signal(child, "SIGTERM");
    const killer = setTimeout(() => signal(child, "SIGKILL"), 5_000);
    await exited;
    clearTimeout(killer);
    signal(child, "SIGKILL"); // what the group's leader left behind
  };
  process.once("exit", () => signal(child, "SIGKILL"));
  const deadline = Date.now() + timeout;
  for (;;) {
    if (done) throw new Error(`${command} ${args.join(" ")} exited before it was ready:\n${output}`);
    if (await ready()) return { output: () => output, stop };
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`${command} ${args.join(" ")} was not ready within ${timeout} ms:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Whether `url` answers an HTTP request at all. */
async function answers(url) {
  try {
    await (await fetch(url, { signal: AbortSignal.timeout(5_000) })).arrayBuffer();
    return true;
  } catch {
    return false;
  }
}

/** Sends SIGNAL to the process group of `child`, if it is still there. */
function signal(child, name) {
  try {
    process.kill(-child.pid, name);
  } catch {}
}

/** The RateLimit-* and Retry-After headers of a response, by lower-case name. */
export function rateLimitHeadersOf(response) {
  return Object.fromEntries([...response.headers].filter(([name]) => name.startsWith("ratelimit-") || name === "retry-after"));
}

/**
 * Sends `count` GET requests to `url`, one after another, with `headers`; each answer as
 * `{ status, headers }` (its RateLimit-* and Retry-After headers).
 */
export async function requests(url, count, headers = {}) {
  const answers = [];
  for (let i = 0; i < count; i++) {
    const response = await fetch(url, { headers, signal: AbortSignal.timeout(30_000) });
    await response.arrayBuffer();
    answers.push({ status: response.status, headers: rateLimitHeadersOf(response) });
  }
  return answers;
}
