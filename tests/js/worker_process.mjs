// A child Node process that the JS tests drive by rounds: one JSON line in, one JSON line out.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

/**
 * Starts `node <script> ...args`, `script` a file beside this one (the child inherits the environment
 * and writes its errors to this process's stderr). `{ child, run }`: `run(round)` sends `round` as a
 * JSON line and resolves to the child's next line, parsed; it throws if the child ended instead.
 */
export function workerProcess(script, args = []) {
  const child = spawn(process.execPath, [fileURLToPath(new URL(script, import.meta.url)), ...args], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  return {
    child,
    async run(round) {
      child.stdin.write(`${JSON.stringify(round)}\n`);
      const { value, done } = await lines.next();
      if (done) throw new Error(`${script} ended`);
      return JSON.parse(value);
    },
  };
}
