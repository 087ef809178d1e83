// The report's cells: numbers and Markdown tables, shared by report.mjs and the sections that write
// their own part of it.

/** A number with as many digits as its size deserves. */
export function num(value) {
  const abs = Math.abs(value);
  const digits = abs >= 100 ? 0 : abs >= 10 ? 1 : abs >= 1 ? 2 : 3;
  return value.toLocaleString("en", { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** A Markdown table of `rows` under `header`, numbers right-aligned after the first column. */
export const table = (header, rows) =>
  [`| ${header.join(" | ")} |`, `|${header.map((_, i) => (i ? "---:" : "---")).join("|")}|`, ...rows.map((r) => `| ${r.join(" | ")} |`)].join("\n");
