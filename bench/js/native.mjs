// Section 4: the native tables, run here so that they land in the same report: `cargo bench --bench
// memory_backend` (criterion: MemoryBackend beside governor, and a newly denied identifier in a full
// ephemeral cache, tabled by scripts/criterion_table.py) and
// bench/gateway/run.sh (the gateway beside raw redis-benchmark on the same script). Each keeps its
// markdown; the JSON gets the same tables as rows.
import { spawn } from "node:child_process";
import { root } from "./libraries.mjs";

/** Runs a command in the repository root, its stderr shown, and resolves with its stdout. */
function run(command, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: root, stdio: ["ignore", "pipe", "inherit"] });
    let stdout = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0 ? resolve(stdout) : reject(new Error(`${command} ${args.join(" ")} exited with ${code}`)),
    );
  });
}

/**
 * The markdown tables of `markdown` as { title (the heading above, if any), rows: [{ column: cell }] },
 * numeric cells as numbers.
 */
export function tables(markdown) {
  const found = [];
  let title = "";
  let table = null;
  for (const line of markdown.split("\n")) {
    const cells = line.startsWith("|") ? line.split("|").slice(1, -1).map((cell) => cell.trim()) : null;
    if (!cells) {
      if (line.startsWith("#")) title = line.replace(/^#+\s*/, "");
      table = null;
    } else if (!table) {
      table = { title, columns: cells, rows: [] };
      found.push(table);
    } else if (!cells.every((cell) => /^:?-+:?$/.test(cell))) {
      const value = (cell) => (/^-?\d+(\.\d+)?$/.test(cell) ? Number(cell) : cell);
      table.rows.push(Object.fromEntries(table.columns.map((column, i) => [column, value(cells[i])])));
    }
  }
  return found.map(({ title, rows }) => ({ title, rows }));
}

/** Runs both; returns { criterion, gateway }, each { markdown, tables }. */
export async function nativeSection({ log }) {
  log("native: cargo bench --bench memory_backend (criterion)");
  await run("cargo", ["bench", "--bench", "memory_backend"]);
  const criterion = await run("python3", ["scripts/criterion_table.py", "target/criterion"]);
  log("native: bench/gateway/run.sh (gateway vs redis-benchmark)");
  const gateway = await run("bash", ["bench/gateway/run.sh"]);
  return {
    criterion: { markdown: criterion.trim(), tables: tables(criterion) },
    gateway: { markdown: gateway.trim(), tables: tables(gateway) },
  };
}
