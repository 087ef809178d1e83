// Section 5c: the WebAssembly V8 compiles for a first decision. V8 compiles each function the first time
// it runs (lazy compilation, Liftoff); `--trace-wasm-compilation-times` prints each one with the size of
// its body. A fresh Node process imports the package, then takes a first in-memory decision and a first
// decision on Redis (through a fake fetch answering the reply the real gateway gave in section 1), and
// marks each step; the bodies compiled between two marks are what that step made V8 compile. Function
// names come from the same build with its names kept (target/pkg-names/, see scripts/build_pkg.sh),
// traced the same way.
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import binaryen from "binaryen";
import { LIMIT } from "./cpu.mjs";
import { pkgDir, root, window } from "./libraries.mjs";

const namesWasm = join(process.env.CARGO_TARGET_DIR ?? join(root, "target"), "pkg-names/edgelimit_bg.wasm");

/** The steps, in the order the traced process takes them. */
const STEPS = ["import", "in-memory limiter made", "first in-memory limit()", "Redis limiter made", "first Redis limit()"];

/** The traced process: `wasm` (a path or undefined) replaces the package's module when given. */
const script = (wasm, reply) => `
import { readFileSync, writeSync } from "node:fs";
const mark = (step) => writeSync(1, "@@step " + step + "\\n");
const REPLY = ${JSON.stringify(reply)};
globalThis.fetch = async () => ({
  status: 200, ok: true, headers: new Headers(), text: async () => REPLY, json: async () => JSON.parse(REPLY),
  arrayBuffer: async () => new TextEncoder().encode(REPLY).buffer,
});
mark("start");
let edgelimit;
${
  wasm
    ? `const { instantiate } = await import(${JSON.stringify(`${pkgDir}wasm_instance.js`)});
instantiate(new WebAssembly.Module(readFileSync(${JSON.stringify(wasm)})));
edgelimit = { ...(await import(${JSON.stringify(`${pkgDir}edgelimit_bg.js`)})), ...(await import(${JSON.stringify(`${pkgDir}ratelimit.js`)})) };`
    : `edgelimit = await import(${JSON.stringify(`${pkgDir}index.node.js`)});`
}
const { Ratelimit, Redis } = edgelimit;
mark(${JSON.stringify(STEPS[0])});
const memory = new Ratelimit({ limiter: Ratelimit.fixedWindow(${LIMIT}, ${JSON.stringify(window)}) });
mark(${JSON.stringify(STEPS[1])});
if (!(await memory.limit("first")).success) throw new Error("the in-memory decision refused");
mark(${JSON.stringify(STEPS[2])});
const onRedis = new Ratelimit({
  redis: new Redis({ url: "http://redis.test", token: "token" }),
  limiter: Ratelimit.fixedWindow(${LIMIT}, ${JSON.stringify(window)}),
  ephemeralCache: false,
});
mark(${JSON.stringify(STEPS[3])});
if (!(await onRedis.limit("cold")).success) throw new Error("the Redis decision refused");
mark(${JSON.stringify(STEPS[4])});
`;

/** Per step, the functions compiled: `[{ index, bytes }]`, from the trace of `script`. */
async function trace(dir, name, source) {
  const file = join(dir, `${name}.mjs`);
  writeFileSync(file, source);
  // V8 prints its trace through C's stdout, buffered apart from Node's writes: unbuffered (stdbuf -o0),
  // its lines and the marks arrive in the order they happened.
  const { stdout } = await promisify(execFile)("stdbuf", ["-o0", process.execPath, "--trace-wasm-compilation-times", file], { maxBuffer: 64 << 20 });
  const steps = {};
  let step = null;
  for (const line of stdout.split("\n")) {
    const marked = line.match(/^@@step (.*)$/);
    if (marked) {
      step = marked[1];
      steps[step] = [];
      continue;
    }
    const compiled = line.match(/^Compiled function 0x[0-9a-f]+#(\d+) using \w+, took .* bodysize (\d+)/);
    if (compiled && step !== null) steps[step].push({ index: Number(compiled[1]), bytes: Number(compiled[2]) });
  }
  // What the start mark's step compiled belongs to the step it closes.
  const byStep = {};
  let previous = "start";
  for (const name of STEPS) {
    byStep[name] = steps[previous] ?? [];
    previous = name;
  }
  return byStep;
}

/** The names of a module's functions, by index (imports first, as V8 counts them). */
function functionNames(path) {
  const module = binaryen.readBinary(readFileSync(path));
  const names = [];
  for (let i = 0; i < module.getNumFunctions(); i++) names.push(binaryen.getFunctionInfo(module.getFunctionByIndex(i)).name);
  module.dispose();
  return names;
}

/**
 * `{ steps: [{ step, functions, bytes, top }] }`: per step, how many functions and body bytes V8
 * compiled in the package, and the largest of them by name (from the names build, when present).
 */
export async function firstCompileSection({ replies, log }) {
  const dir = mkdtempSync(join(tmpdir(), "edgelimit-bench-compile-"));
  try {
    log("first compile: tracing V8's compilation of a first decision");
    const traced = await trace(dir, "package", script(undefined, replies.edgelimit));
    let named = null;
    if (existsSync(namesWasm)) {
      const names = functionNames(namesWasm);
      const namedTrace = await trace(dir, "names", script(namesWasm, replies.edgelimit));
      named = Object.fromEntries(Object.entries(namedTrace).map(([step, list]) => [step, list.map(({ index, bytes }) => ({ name: names[index] ?? `#${index}`, bytes }))]));
    }
    const steps = STEPS.map((step) => {
      const list = traced[step];
      const top = (named?.[step] ?? list.map(({ index, bytes }) => ({ name: `#${index}`, bytes })))
        .sort((a, b) => b.bytes - a.bytes)
        .slice(0, 8);
      return { step, functions: list.length, bytes: list.reduce((sum, { bytes }) => sum + bytes, 0), top };
    });
    return { steps };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The section as markdown. */
export function firstCompileMarkdown({ steps }) {
  const rows = steps.map(({ step, functions, bytes }) => `| ${step} | ${functions} | ${bytes.toLocaleString("en")} |`);
  const firsts = steps.filter(({ step }) => step.startsWith("first"));
  const tops = firsts
    .map(({ step, top }) => `**${step}**: ${top.map(({ name, bytes }) => `\`${shortName(name)}\` ${bytes.toLocaleString("en")} B`).join(", ")}`)
    .join("\n\n");
  return `### WebAssembly compiled for a first decision (V8, Node ${process.versions.node})

Function bodies V8 compiled lazily at each step of a fresh process (\`--trace-wasm-compilation-times\`);
a step's bytes are those of the functions it ran for the first time.

| step | functions compiled | bytes of wasm compiled |
|---|---:|---:|
${rows.join("\n")}

The largest functions each first decision compiled (names from target/pkg-names/):

${tops}`;
}

/** A Rust symbol without its hash and generic noise, for a table cell. */
const shortName = (name) => name.replace(/::h[0-9a-f]{16}$/, "").replace(/\[[0-9a-f]{16}\]/g, "");
