// Decisions per time slice, and their bar chart on a plain canvas: allowed (solid green) at the bottom
// of each bar, denied (red, hatched, so it does not rely on colour alone) on top, the newest slice on the right.

/** Length of one time slice, in milliseconds. */
export const SLICE_MS = 1000;
/** How many slices a chart shows (and a series keeps). */
export const SLICES = 30;

/** The slice a time (ms since the epoch) falls in. */
export const sliceOf = (time) => Math.floor(time / SLICE_MS);

/** Colours of the chart: the same as `--allowed`, `--denied` and `--text` in playground.css. */
const COLORS = { allowed: "#1a7f37", denied: "#cf222e", text: "#1f2328", grid: "#6e7781" };

/** Allowed and denied counts per slice, the last SLICES slices kept. */
export class SliceSeries {
  #slices = new Map();

  /** Counts one decision in `slice`. */
  add(slice, success) {
    const counts = this.#slices.get(slice) ?? { allowed: 0, denied: 0 };
    counts[success ? "allowed" : "denied"] += 1;
    this.#slices.set(slice, counts);
    for (const old of this.#slices.keys()) if (old <= slice - SLICES) this.#slices.delete(old);
  }

  /** The SLICES slices ending with `last`, oldest first: `{ slice, allowed, denied }`. */
  rows(last) {
    return Array.from({ length: SLICES }, (_, i) => {
      const slice = last - SLICES + 1 + i;
      return { slice, ...(this.#slices.get(slice) ?? { allowed: 0, denied: 0 }) };
    });
  }
}

/** The smallest of 1, 2, 5, 10, 20, 50… at least `n`, so the scale changes rarely. */
function niceCeiling(n) {
  for (let step = 1; ; step *= 10) {
    for (const nice of [1, 2, 5]) if (nice * step >= n) return nice * step;
  }
}

/** Diagonal white stripes on red, the fill of denied requests. */
function hatch(context, scale) {
  const size = Math.round(8 * scale);
  const tile = new OffscreenCanvas(size, size);
  const g = tile.getContext("2d");
  g.fillStyle = COLORS.denied;
  g.fillRect(0, 0, size, size);
  g.strokeStyle = "#ffffff";
  g.lineWidth = 1.5 * scale;
  g.beginPath();
  for (const offset of [-size, 0, size]) {
    g.moveTo(offset, size);
    g.lineTo(offset + size, 0);
  }
  g.stroke();
  return context.createPattern(tile, "repeat");
}

/** Draws `rows` (from `SliceSeries.rows`) on `canvas`, sized to its box on the page. */
export function drawChart(canvas, rows) {
  const scale = window.devicePixelRatio || 1;
  const width = Math.round(canvas.clientWidth * scale);
  const height = Math.round(canvas.clientHeight * scale);
  if (width === 0 || height === 0) return;
  if (canvas.width !== width || canvas.height !== height) Object.assign(canvas, { width, height });
  const g = canvas.getContext("2d");
  g.setTransform(scale, 0, 0, scale, 0, 0);
  const w = canvas.clientWidth;
  const h = canvas.clientHeight;
  g.clearRect(0, 0, w, h);

  const top = 16;
  const bottom = h - 16;
  const left = 4;
  const right = w - 4;
  const max = niceCeiling(Math.max(1, ...rows.map((row) => row.allowed + row.denied)));
  const perUnit = (bottom - top) / max;
  const step = (right - left) / rows.length;
  const barWidth = Math.max(1, step - Math.min(3, step / 4));
  const deniedFill = hatch(g, scale);

  rows.forEach((row, i) => {
    const x = left + i * step;
    const allowedHeight = row.allowed * perUnit;
    const deniedHeight = row.denied * perUnit;
    g.fillStyle = COLORS.allowed;
    g.fillRect(x, bottom - allowedHeight, barWidth, allowedHeight);
    g.fillStyle = deniedFill;
    g.fillRect(x, bottom - allowedHeight - deniedHeight, barWidth, deniedHeight);
  });

  g.strokeStyle = COLORS.grid;
  g.lineWidth = 1;
  g.beginPath();
  g.moveTo(left, bottom + 0.5);
  g.lineTo(right, bottom + 0.5);
  g.setLineDash([3, 3]);
  g.moveTo(left, top + 0.5);
  g.lineTo(right, top + 0.5);
  g.stroke();
  g.setLineDash([]);

  g.fillStyle = COLORS.text;
  g.font = "12px system-ui, sans-serif";
  g.textBaseline = "bottom";
  g.textAlign = "left";
  g.fillText(`${max} per ${SLICE_MS / 1000} s`, left, top - 2);
  g.textBaseline = "top";
  g.fillText(`−${(SLICES * SLICE_MS) / 1000} s`, left, bottom + 3);
  g.textAlign = "right";
  g.fillText("now", right, bottom + 3);
}
