// One limiter of the playground: its parameter fields (checked by the library itself, whose error shows
// next to the field it names), the Ratelimit they make on the chosen store, the decisions it answered
// (counts, last remaining/reset, per time slice) and their chart.
import { SLICE_MS, SLICES, SliceSeries, drawChart, sliceOf } from "./chart.mjs";
import { h, hidden, showError } from "./dom.mjs";

/** The algorithms, their factory parameters (name and starting value) and what they do. */
export const ALGORITHMS = {
  fixedWindow: {
    params: [["tokens", 5], ["window", "10 s"]],
    about: "tokens per window, in windows aligned to the epoch",
  },
  slidingWindow: {
    params: [["tokens", 5], ["window", "10 s"]],
    about: "tokens per window, the previous window weighted by how much of it overlaps",
  },
  tokenBucket: {
    params: [["refillRate", 1], ["interval", "2 s"], ["maxTokens", 5]],
    about: "a bucket of maxTokens, refilled by refillRate every interval",
  },
  gcra: {
    params: [["limit", 5], ["period", "10 s"], ["burst", 5]],
    about: "limit per period, refilled continuously, bursts of up to burst (empty: limit)",
  },
  cachedFixedWindow: {
    params: [["tokens", 5], ["window", "10 s"]],
    about: "a fixed window answered from this page's count once known, the Redis write in the background",
  },
};

/** A field's text as the library should see it: a number when it reads as one, else the text itself. */
function fieldValue(text) {
  const trimmed = text.trim();
  return trimmed !== "" && Number.isFinite(Number(trimmed)) ? Number(trimmed) : trimmed;
}

/** The arguments of `algorithm`'s factory from its fields' texts (GCRA's burst, when given, as `{ burst }`). */
export function factoryArgs(algorithm, texts) {
  const args = texts.map(fieldValue);
  if (algorithm === "gcra") args[2] = args[2] === "" ? undefined : { burst: args[2] };
  return args;
}

/** A wait in milliseconds as text: "4.2 s" under a minute, else "12 min 5 s" or "3 h 20 min". */
function untilText(ms) {
  const seconds = Math.max(0, ms) / 1000;
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ${Math.floor(seconds % 60)} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** One algorithm's limiter on the page. */
export class Lane {
  /** The lane's card, to put on the page. */
  element;
  #algorithm;
  #library;
  #record;
  #fields = new Map();
  #enabled;
  #laneError;
  #stats = {};
  #canvas;
  #table;
  #store = null;
  #ratelimit = null;
  #generation = 0;
  #prefix = "";
  #inflight = new Set();
  #dirty = true;
  #drawnSlice = null;
  #drawnWidth = 0;
  #counts;
  #series;

  /**
   * `algorithm` names an entry of ALGORITHMS; `library` is the package (`{ Ratelimit }`); `record(decision)`
   * is called with every decision this lane counts.
   */
  constructor(algorithm, library, record) {
    this.#algorithm = algorithm;
    this.#library = library;
    this.#record = record;
    const id = (suffix) => `${algorithm}-${suffix}`;
    const { params, about } = ALGORITHMS[algorithm];

    this.#enabled = h("input", { type: "checkbox", id: id("on"), checked: true });
    const fields = params.map(([name, initial]) => {
      const input = h("input", { id: id(name), name, value: String(initial), autocomplete: "off", spellcheck: false, "aria-describedby": id(`${name}-error`) });
      const error = h("p", { id: id(`${name}-error`), className: "field-error" });
      this.#fields.set(name, { input, error });
      input.addEventListener("input", () => this.rebuild());
      return h("div", { className: "field" }, h("label", { for: id(name) }, name, hidden(` of ${algorithm}`)), input, error);
    });
    this.#laneError = h("p", { id: id("error"), className: "field-error" });

    const stat = (name, label) => {
      this.#stats[name] = h("dd", { "data-stat": name });
      return h("div", {}, h("dt", {}, label), this.#stats[name]);
    };
    this.#canvas = h("canvas", { role: "img", id: id("chart") });
    this.#table = h("tbody");
    this.element = h(
      "article",
      { className: "lane", "data-lane": algorithm, "aria-labelledby": id("title") },
      h("h3", { id: id("title") }, algorithm),
      h("p", { className: "about" }, about),
      h("label", { className: "toggle" }, this.#enabled, " send requests to this limiter", hidden(` (${algorithm})`)),
      h("div", { className: "params" }, ...fields),
      this.#laneError,
      h("dl", { className: "stats" }, stat("allowed", "allowed"), stat("denied", "denied"), stat("remaining", "remaining"), stat("reset", "reset in"), stat("reasons", "answered by")),
      this.#canvas,
      h(
        "details",
        {},
        h("summary", {}, "Chart data", hidden(` of ${algorithm}`)),
        h("table", {}, h("caption", {}, `${algorithm}: requests per second, last ${SLICES} s`), h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "second"), h("th", { scope: "col" }, "allowed"), h("th", { scope: "col" }, "denied"))), this.#table),
      ),
    );
    this.#reset();
  }

  /** Whether this lane takes requests: ticked, with parameters the library accepted. */
  get ready() {
    return this.#enabled.checked && this.#ratelimit !== null;
  }

  /** Uses `store` (`{ redis, session }`, redis undefined for memory) from now on, starting over. */
  setStore(store) {
    this.#store = store;
    this.rebuild();
  }

  /**
   * Makes the limiter the fields describe, on a fresh prefix, and starts the counts over; a parameter the
   * library rejects shows its error next to the field it names, and the lane takes no requests.
   */
  rebuild() {
    const { Ratelimit } = this.#library;
    // The old limiter may still answer requests in flight: the garbage collector frees it afterwards.
    this.#ratelimit = null;
    this.#generation += 1;
    this.#prefix = `${this.#store.session}:${this.#algorithm}:${this.#generation}`;
    this.element.dataset.prefix = this.#prefix;
    this.#reset();
    for (const { input, error } of this.#fields.values()) showError(input, error, null);
    showError(null, this.#laneError, null);
    const args = factoryArgs(this.#algorithm, [...this.#fields.values()].map(({ input }) => input.value));
    try {
      const limiter = Ratelimit[this.#algorithm](...args);
      this.#ratelimit = new Ratelimit({ limiter, redis: this.#store.redis, prefix: this.#prefix });
    } catch (error) {
      const named = this.#fields.get(/`(\w+)`/.exec(error.message)?.[1]);
      if (named) showError(named.input, named.error, error);
      else showError(null, this.#laneError, error);
    }
  }

  /**
   * Asks the limiter about one request of `identifier` and counts the answer once its `pending` work is
   * done. Rejects with the library's error (a bad identifier, say); an answer for a limiter that was
   * rebuilt meanwhile is dropped.
   */
  async send(identifier) {
    const ratelimit = this.#ratelimit;
    const generation = this.#generation;
    const slice = sliceOf(Date.now());
    const done = (async () => {
      const { success, remaining, reset, limit, reason, pending } = await ratelimit.limit(identifier);
      await pending;
      if (generation !== this.#generation) return;
      const decision = { lane: this.#algorithm, prefix: this.#prefix, identifier, slice, success, remaining, reset, limit, reason: reason ?? null };
      this.#count(decision);
      this.#record(decision);
    })();
    this.#inflight.add(done);
    try {
      await done;
    } finally {
      this.#inflight.delete(done);
    }
  }

  /** Resolves once every request sent so far is answered. */
  async settled() {
    while (this.#inflight.size > 0) await Promise.allSettled([...this.#inflight]);
  }

  /** Updates the counts, the reset countdown and the chart on the page. */
  render(now) {
    const counts = this.#counts;
    const last = counts.last;
    const text = {
      allowed: String(counts.allowed),
      denied: String(counts.denied),
      remaining: last ? `${last.remaining} (${last.identifier})` : "–",
      reset: last ? untilText(last.reset - now) : "–",
      reasons: Object.entries(counts.reasons).map(([reason, n]) => `${reason} ${n}`).join(", ") || "the limiter",
    };
    for (const [name, value] of Object.entries(text)) {
      if (this.#stats[name].textContent !== value) this.#stats[name].textContent = value;
    }
    this.#stats.reset.dataset.reset = last ? String(last.reset) : "";
    this.element.classList.toggle("off", !this.ready);
    const slice = sliceOf(now);
    if (!this.#dirty && slice === this.#drawnSlice && this.#canvas.clientWidth === this.#drawnWidth) return;
    const rows = this.#series.rows(slice);
    drawChart(this.#canvas, rows);
    const recent = rows.reduce((sum, row) => [sum[0] + row.allowed, sum[1] + row.denied], [0, 0]);
    this.#canvas.setAttribute("aria-label", `${this.#algorithm}: allowed and denied requests per second, last ${SLICES} s: ${recent[0]} allowed, ${recent[1]} denied`);
    this.#table.replaceChildren(
      ...rows
        .filter((row) => row.allowed + row.denied > 0)
        .reverse()
        .map((row) => h("tr", { "data-slice": String(row.slice) }, h("td", {}, new Date(row.slice * SLICE_MS).toLocaleTimeString()), h("td", {}, String(row.allowed)), h("td", {}, String(row.denied)))),
    );
    this.#dirty = false;
    this.#drawnSlice = slice;
    this.#drawnWidth = this.#canvas.clientWidth;
  }

  /** One line for the running totals read out to screen readers. */
  summary() {
    return `${this.#algorithm}: ${this.#counts.allowed} allowed, ${this.#counts.denied} denied`;
  }

  #count(decision) {
    const counts = this.#counts;
    counts[decision.success ? "allowed" : "denied"] += 1;
    if (decision.reason) counts.reasons[decision.reason] = (counts.reasons[decision.reason] ?? 0) + 1;
    counts.last = decision;
    this.#series.add(decision.slice, decision.success);
    this.#dirty = true;
  }

  #reset() {
    this.#counts = { allowed: 0, denied: 0, reasons: {}, last: null };
    this.#series = new SliceSeries();
    this.#dirty = true;
  }
}
