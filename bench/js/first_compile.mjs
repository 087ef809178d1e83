// Section 5c: the WebAssembly V8 compiles for a first decision. V8 compiles each function the first time
// it runs (lazy compilation, Liftoff); `--trace-wasm-compilation-times` prints each one with the size of
// its body. A fresh Node process per path imports the package, makes a limiter (in memory, or on Redis
// through a fake fetch answering the reply the real gateway gave in section 1), takes one decision, and
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

/** The steps each traced process takes, in order. */
const STEPS = ["import", "limiter made", "first limit()"];

/** How each path's limiter is made (`Ratelimit`, `Redis` in scope). */
const LIMITERS = {
  "in memory": `new Ratelimit({ limiter: Ratelimit.fixedWindow(${LIMIT}, ${JSON.stringify(window)}) })`,
  Redis: `new Ratelimit({
  redis: new Redis({ url: "http://redis.test", token: "token" }),
  limiter: Ratelimit.fixedWindow(${LIMIT}, ${JSON.stringify(window)}),
  ephemeralCache: false,
})`,
};

/**
 * The traced process of one path: imports the package (its module replaced by `wasm` when given),
 * makes the limiter, takes one decision (on Redis through a fake fetch answering `reply`).
 */
const script = (path, wasm, reply) => `
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
const ratelimit = ${LIMITERS[path]};
mark(${JSON.stringify(STEPS[1])});
if (!(await ratelimit.limit("first")).success) throw new Error("the first decision refused");
mark(${JSON.stringify(STEPS[2])});
`;

/** Per step, the functions compiled: `[{ index, bytes }]`, from the trace of `source`. */
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
  // What was compiled after a mark belongs to the step that the next mark closes.
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
 * Per path (in memory, Redis), each in a fresh process: per step, how many functions and body bytes V8
 * compiled in the package, and the largest of them by name (from the names build).
 */
export async function firstCompileSection({ replies, log }) {
  const dir = mkdtempSync(join(tmpdir(), "edgelimit-bench-compile-"));
  try {
    log("first compile: tracing V8's compilation of a first decision");
    const names = existsSync(namesWasm) ? functionNames(namesWasm) : null;
    const paths = [];
    for (const path of Object.keys(LIMITERS)) {
      const traced = await trace(dir, "package", script(path, undefined, replies.edgelimit));
      const named = names && (await trace(dir, "names", script(path, namesWasm, replies.edgelimit)));
      const steps = STEPS.map((step) => {
        const list = traced[step];
        const top = (named ? named[step].map(({ index, bytes }) => ({ name: names[index] ?? `#${index}`, bytes })) : list.map(({ index, bytes }) => ({ name: `#${index}`, bytes })))
          .sort((a, b) => b.bytes - a.bytes)
          .slice(0, 8);
        return { step, functions: list.length, bytes: list.reduce((sum, { bytes }) => sum + bytes, 0), top };
      });
      const decision = steps.filter(({ step }) => step !== "import");
      paths.push({
        path,
        steps,
        firstDecision: { functions: decision.reduce((sum, { functions }) => sum + functions, 0), bytes: decision.reduce((sum, { bytes }) => sum + bytes, 0) },
      });
    }
    return { paths };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The section as markdown. */
export function firstCompileMarkdown({ paths }) {
  const rows = paths.flatMap(({ path, steps, firstDecision }) => [
    ...steps.map(({ step, functions, bytes }) => `| ${path} | ${step} | ${functions} | ${bytes.toLocaleString("en")} |`),
    `| ${path} | **a first decision** (limiter made, first limit()) | **${firstDecision.functions}** | **${firstDecision.bytes.toLocaleString("en")}** |`,
  ]);
  const tops = paths
    .map(({ path, steps }) => {
      const top = steps.at(-1).top;
      return `**${path}, first limit()**: ${top.map(({ name, bytes }) => `\`${shortName(name)}\` ${bytes.toLocaleString("en")} B`).join(", ")}`;
    })
    .join("\n\n");
  return `### WebAssembly compiled for a first decision (V8, Node ${process.versions.node})

Function bodies V8 compiled lazily at each step of a fresh process per path
(\`--trace-wasm-compilation-times\`); a step's bytes are those of the functions it ran for the first time.
A first decision is what a cold instance compiles between its import and its first answer.

| path | step | functions compiled | bytes of wasm compiled |
|---|---|---:|---:|
${rows.join("\n")}

The largest functions each first limit() compiled (names from target/pkg-names/):

${tops}`;
}

/** A Rust symbol without its hash and generic noise, for a table cell. */
const shortName = (name) => name.replace(/::h[0-9a-f]{16}$/, "").replace(/\[[0-9a-f]{16}\]/g, "");
