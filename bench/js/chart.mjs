// The chart: one SVG, two panels against concurrent callers — CPU per decision with the network removed
// (section 1, fixed window) and decisions per second end to end (section 3) — edgelimit beside the
// peer, each point the median with a min–max bar. Hand-written SVG, no dependency.

const WIDTH = 460;
const HEIGHT = 300;
const MARGIN = { left: 64, right: 16, top: 40, bottom: 48 };
const COLORS = { edgelimit: "#d9480f", peer: "#1c7ed6" };

const escape = (text) => String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;");

/** A "nice" axis maximum and its tick step for values up to `max`. */
function axis(max) {
  const raw = max / 4;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= raw);
  return { top: Math.ceil(max / step) * step, step };
}

/**
 * One panel at horizontal offset `x0`: `series` maps a library to points { callers, median, min, max }
 * (callers equally spaced, as 1, 4, 16, 64 are on a log scale).
 */
function panel(x0, title, unit, series) {
  const callers = [...new Set(Object.values(series).flatMap((points) => points.map((p) => p.callers)))];
  const { top, step } = axis(Math.max(...Object.values(series).flatMap((points) => points.map((p) => p.max))));
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const x = (c) => x0 + MARGIN.left + ((callers.indexOf(c) + 0.5) / callers.length) * plotW;
  const y = (v) => MARGIN.top + plotH - (v / top) * plotH;
  const parts = [
    `<text x="${x0 + WIDTH / 2}" y="20" text-anchor="middle" font-weight="bold">${escape(title)}</text>`,
    `<text x="${x0 + 14}" y="${MARGIN.top + plotH / 2}" text-anchor="middle" transform="rotate(-90 ${x0 + 14} ${MARGIN.top + plotH / 2})">${escape(unit)}</text>`,
    `<text x="${x0 + MARGIN.left + plotW / 2}" y="${HEIGHT - 10}" text-anchor="middle">concurrent callers</text>`,
  ];
  for (let v = 0; v <= top + step / 2; v += step) {
    parts.push(
      `<line x1="${x0 + MARGIN.left}" x2="${x0 + MARGIN.left + plotW}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`,
      `<text x="${x0 + MARGIN.left - 6}" y="${y(v) + 4}" text-anchor="end">${Number(v.toPrecision(6)).toLocaleString("en")}</text>`,
    );
  }
  for (const c of callers) {
    parts.push(`<text x="${x(c)}" y="${MARGIN.top + plotH + 18}" text-anchor="middle">${c}</text>`);
  }
  Object.entries(series).forEach(([lib, points], i) => {
    const color = COLORS[lib];
    const at = (c) => x(c) + (i - 0.5) * 6; // side by side, so that the min–max bars do not hide each other
    parts.push(
      `<polyline fill="none" stroke="${color}" stroke-width="2" points="${points.map((p) => `${at(p.callers)},${y(p.median)}`).join(" ")}"/>`,
    );
    for (const p of points) {
      parts.push(
        `<line x1="${at(p.callers)}" x2="${at(p.callers)}" y1="${y(p.min)}" y2="${y(p.max)}" stroke="${color}"/>`,
        `<circle cx="${at(p.callers)}" cy="${y(p.median)}" r="3.5" fill="${color}"/>`,
      );
    }
  });
  return parts.join("\n");
}

/** The SVG text from the CPU rows (section 1) and the end-to-end rows (section 3). */
export function chart({ cpuRows, e2eRows, peerName }) {
  const points = (rows, field) =>
    Object.fromEntries(
      ["edgelimit", "peer"].map((lib) => [lib, rows.map((row) => ({ callers: row.callers, ...row[lib][field] }))]),
    );
  const fixed = cpuRows.filter((row) => row.algorithm === "fixed window");
  const legend = Object.entries({ edgelimit: "edgelimit", peer: peerName })
    .map(
      ([lib, name], i) =>
        `<rect x="${MARGIN.left + i * 260}" y="${HEIGHT + 6}" width="12" height="12" fill="${COLORS[lib]}"/>` +
        `<text x="${MARGIN.left + i * 260 + 18}" y="${HEIGHT + 17}">${escape(name)}</text>`,
    )
    .join("\n");
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${2 * WIDTH}" height="${HEIGHT + 28}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
${panel(0, "CPU per decision, network removed (fixed window)", "µs of CPU per decision", points(fixed, "cpuUs"))}
${panel(WIDTH, "Decisions per second through the gateway (fixed window)", "decisions / s", points(e2eRows, "perSecond"))}
${legend}
</svg>
`;
}
