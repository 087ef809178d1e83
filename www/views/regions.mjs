// The multi-region view: one MultiRegionRatelimit over the regions `make www` starts (a redis-server
// each, behind the gateway), each region with a one-way delay the person sets. Requests are sent by hand,
// in a burst, or at a rate from simulated clients; the view shows which region answered each, the
// allowed and denied counts, the merges still running (`pending`), and what every region holds now for
// the current window, read from Redis: the regions diverge while a slow region lags, and converge once
// the merges land. It uses the package the page loaded (pkg/), the same module as the other view.
import { h, hidden, showError } from "../dom.mjs";
import { ALGORITHMS, factoryArgs } from "../lane.mjs";
import { REQUEST_ID, Region, Requests } from "../region.mjs";
import { Traffic } from "../traffic.mjs";

/** The algorithms MultiRegionRatelimit takes, and the class whose factory makes each. */
const FACTORIES = { fixedWindow: "MultiRegionRatelimit", slidingWindow: "MultiRegionRatelimit", tokenBucket: "Ratelimit", gcra: "Ratelimit" };
/** The most a region's one-way delay can be set to, in milliseconds. */
const MAX_DELAY_MS = 500;
/** How often what the regions hold is read, in milliseconds. */
const READ_EVERY_MS = 500;
/** How many answers the "Last answers" list keeps. */
const LOG_LENGTH = 50;
/** The least time between two updates of the totals read out to screen readers, in milliseconds. */
const SUMMARY_EVERY_MS = 2000;

/** Bounds of the request fields, checked by the page (they are not the library's parameters). */
const REQUEST_FIELDS = {
  burst: { id: "regions-burst-size", label: "requests in a burst", value: 8, min: 1, max: 50, step: 1 },
  clients: { id: "regions-clients", label: "simulated clients", value: 2, min: 1, max: 10, step: 1 },
  rate: { id: "regions-rate", label: "requests per second, each", value: 2, min: 0.1, max: 20, step: 0.1 },
};

/** The regions side by side under one limit, with a delay each. */
export class RegionsView {
  /** The view's section, to put on the page. */
  element;
  #config;
  #record;
  #library;
  #regions = [];
  #session = "";
  #generation = 0;
  #prefix = "";
  #requests = null;
  #ratelimit = null;
  #sent = 0;
  #inflight = new Set();
  #merging = new Set();
  #counts;
  #held = null;
  #reading = false;
  #readAt = 0;
  #traffic;
  #body;
  #status;
  #algorithm;
  #params;
  #fields = new Map();
  #limiterError;
  #identifier;
  #identifierError;
  #inputs = {};
  #errors = {};
  #run;
  #cards = [];
  #totals = {};
  #table;
  #readError;
  #summary;
  #summaryAt = 0;
  #log;
  #logBuffer = [];

  /**
   * `library` is the package's exports; `config` is `{ url, tokens }` of the regions' gateway (null:
   * none); `record(decision)` sees every answer.
   */
  constructor(library, config, record) {
    this.#library = library;
    this.#config = config;
    this.#record = record;
    this.#status = h("p", { id: "regions-status", role: "status" });
    this.#body = h("div", { className: "regions-body" });
    this.element = h(
      "section",
      { className: "view", id: "regions-view", "aria-labelledby": "regions-title" },
      h("h2", { id: "regions-title" }, "Regions converging"),
      h("p", { className: "about" }, "One MultiRegionRatelimit over several Redis databases (one redis-server per region, behind the gateway). Every request goes to every region at once; the first region to reply answers, and the request's pending work merges the regions (the union of the request ids they hold). Slow a region down to watch it lag, then catch up."),
      this.#status,
      this.#body,
    );
  }

  /** Shows the view over the regions; says why not when there are none. */
  load() {
    if (!this.#config) {
      this.#status.textContent = "No regions: start the page with make www to use this view.";
      return;
    }
    this.#regions = this.#config.tokens.map((token, index) => new Region(index, this.#config.url, token));
    this.#build();
    this.#status.textContent = `${this.#regions.length} regions behind the gateway at ${this.#config.url}.`;
    this.element.dataset.ready = "true";
    if (this.#session) this.#rebuild();
  }

  /** Takes the page's session (`{ session }`) for the key prefix; the store choice does not apply here. */
  setStore({ session }) {
    if (session === this.#session) return;
    this.#session = session;
    if (this.#regions.length > 0) this.#rebuild();
  }

  /** Resolves once every request sent so far is answered and its merges have settled. */
  async settled() {
    while (this.#inflight.size > 0) await Promise.allSettled([...this.#inflight]);
  }

  /** Updates the regions' cards, the totals, what the regions hold, the answers and the summary. */
  render(now) {
    if (!this.#counts) return;
    const counts = this.#counts;
    this.#regions.forEach((region, i) => {
      const card = this.#cards[i];
      set(card.answered, String(counts.byRegion[i]));
      set(card.decisions, String(region.onTheWay.decisions));
      set(card.merges, String(region.onTheWay.merges));
    });
    set(this.#totals.allowed, String(counts.allowed));
    set(this.#totals.denied, String(counts.denied));
    set(this.#totals.merging, this.#merging.size === 0 ? "none: every pending has settled" : `${this.#merging.size} ${this.#merging.size === 1 ? "request" : "requests"}`);
    this.#totals.merging.dataset.count = String(this.#merging.size);
    const used = this.#sent > 0 || this.#inflight.size > 0;
    if (used && now - this.#readAt >= READ_EVERY_MS && !this.#reading) this.#read(now);
    if (this.#logBuffer.length > 0) {
      this.#log.prepend(...this.#logBuffer.splice(0).reverse());
      while (this.#log.children.length > LOG_LENGTH) this.#log.lastChild.remove();
    }
    const answered = this.#regions.map((_, i) => `region ${i} ${counts.byRegion[i]}`).join(", ");
    const merging = this.#merging.size === 0 ? "every merge settled" : `${this.#merging.size} still merging`;
    const summary = `Regions: ${counts.allowed} allowed, ${counts.denied} denied; answered by ${answered}; ${merging}.`;
    if (this.#summary.textContent !== summary && now - this.#summaryAt >= SUMMARY_EVERY_MS) {
      this.#summary.textContent = summary;
      this.#summaryAt = now;
    }
  }

  /** Makes the view's controls, region cards, table and log. */
  #build() {
    this.#algorithm = h("select", { id: "regions-algorithm" }, ...Object.keys(FACTORIES).map((name) => h("option", { value: name }, name)));
    this.#algorithm.addEventListener("change", () => {
      this.#makeParams();
      this.#rebuild();
    });
    this.#params = h("div", { className: "params", role: "group" });
    this.#limiterError = h("p", { id: "regions-limiter-error", className: "field-error" });
    this.#makeParams();

    const cards = this.#regions.map((region, i) => {
      const id = `region-${i}`;
      const slider = h("input", { type: "range", id: `${id}-delay`, min: 0, max: MAX_DELAY_MS, step: 10, value: 0, "aria-valuetext": "0 ms" });
      const shown = h("span", { className: "delay", "aria-hidden": "true" }, "0 ms");
      slider.addEventListener("input", () => {
        region.delay = Number(slider.value);
        slider.setAttribute("aria-valuetext", `${slider.value} ms`);
        shown.textContent = `${slider.value} ms`;
      });
      const stat = (label) => {
        const dd = h("dd", {});
        return [dd, h("div", {}, h("dt", {}, label), dd)];
      };
      const [answered, answeredRow] = stat("answered");
      const [decisions, decisionsRow] = stat("decisions on the way");
      const [merges, mergesRow] = stat("merges on the way");
      this.#cards.push({ answered, decisions, merges });
      answered.dataset.stat = "answered";
      return h(
        "article",
        { className: "region", "data-region": String(i), "aria-labelledby": `${id}-title` },
        h("h4", { id: `${id}-title` }, `Region ${i}`),
        h("div", { className: "field" }, h("label", { for: `${id}-delay` }, "one-way delay", hidden(` of region ${i}`), " ", shown), slider),
        h("dl", { className: "stats" }, answeredRow, decisionsRow, mergesRow),
      );
    });

    this.#identifier = h("input", { id: "regions-identifier", value: "client-1", autocomplete: "off", spellcheck: false, "aria-describedby": "regions-identifier-error" });
    this.#identifierError = h("p", { id: "regions-identifier-error", className: "field-error" });
    const sendOne = h("button", { type: "button", id: "regions-send-one", className: "primary" }, "Send one");
    sendOne.addEventListener("click", () => this.#sendByHand(1));
    this.#identifier.addEventListener("keydown", (event) => {
      if (event.key === "Enter") sendOne.click();
    });
    const field = (name) => {
      const { id, label, ...bounds } = REQUEST_FIELDS[name];
      this.#inputs[name] = h("input", { id, type: "number", inputMode: "decimal", ...bounds, "aria-describedby": `${id}-error` });
      this.#errors[name] = h("p", { id: `${id}-error`, className: "field-error" });
      this.#inputs[name].addEventListener("input", () => {
        if (name === "burst") this.#settings(["burst"]);
        else if (this.#settings(["clients", "rate"]) && this.#traffic.running) this.#start();
      });
      return h("div", { className: "field" }, h("label", { for: id }, label), this.#inputs[name], this.#errors[name]);
    };
    const sendBurst = h("button", { type: "button", id: "regions-send-burst", className: "primary" }, "Send burst");
    sendBurst.addEventListener("click", () => {
      const settings = this.#settings(["burst"]);
      if (settings) this.#sendByHand(settings.burst);
    });
    this.#traffic = new Traffic((identifier) => this.#send(identifier, null));
    this.#run = h("button", { type: "button", id: "regions-run", className: "primary" }, "Start");
    this.#run.addEventListener("click", () => (this.#traffic.running ? this.#stop() : this.#start()));
    const startOver = h("button", { type: "button", id: "regions-start-over" }, "Start over");
    startOver.addEventListener("click", () => this.#rebuild());

    const total = (name, label) => {
      this.#totals[name] = h("dd", { "data-stat": name });
      return h("div", {}, h("dt", {}, label), this.#totals[name]);
    };
    this.#table = h("tbody");
    this.#readError = h("p", { id: "regions-read-error", className: "field-error" });
    this.#summary = h("p", { id: "regions-summary", className: "visually-hidden", "aria-live": "polite" });
    this.#log = h("ol", { id: "regions-log", className: "log", tabIndex: 0, "aria-labelledby": "regions-log-title" });
    this.#body.replaceChildren(
      h(
        "div",
        { className: "controls", role: "group", "aria-labelledby": "regions-limiter-title" },
        h("h3", { id: "regions-limiter-title" }, "Limit"),
        h("div", { className: "field algorithm" }, h("label", { for: "regions-algorithm" }, "algorithm"), this.#algorithm),
        this.#params,
        this.#limiterError,
        h("p", { className: "about" }, "Keys start with ", h("code", { id: "regions-prefix" }), ". The ephemeral cache is off, so every request reaches the regions."),
      ),
      h("div", { className: "regions" }, ...cards),
      h(
        "div",
        { className: "controls", role: "group", "aria-labelledby": "regions-requests-title" },
        h("h3", { id: "regions-requests-title" }, "Requests"),
        h("div", { className: "by-hand" }, h("div", { className: "field" }, h("label", { for: "regions-identifier" }, "identifier"), this.#identifier, this.#identifierError), sendOne, field("burst"), sendBurst),
        h("div", { className: "at-rate" }, field("clients"), field("rate"), this.#run, startOver),
        h("p", { className: "about" }, "“Send burst” sends that many requests of the identifier at once. The simulated clients are client-1, client-2, and so on. “Start over” forgets every count, on a fresh prefix."),
        this.#summary,
      ),
      h("dl", { className: "stats totals" }, total("allowed", "allowed"), total("denied", "denied"), total("merging", "still merging (pending)")),
      h(
        "table",
        { id: "regions-held" },
        h("caption", {}, "Request ids each region holds for the current window of each identifier, read from Redis every half second"),
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "identifier"), ...this.#regions.map((_, i) => h("th", { scope: "col" }, `region ${i}`)), h("th", { scope: "col" }, "regions"))),
        this.#table,
      ),
      this.#readError,
      h("h3", { id: "regions-log-title" }, "Last answers"),
      this.#log,
    );
  }

  /** Shows the parameter fields of the chosen algorithm. */
  #makeParams() {
    const algorithm = this.#algorithm.value;
    this.#fields.clear();
    const fields = ALGORITHMS[algorithm].params.map(([name, initial]) => {
      const id = `regions-${name}`;
      const input = h("input", { id, name, value: String(initial), autocomplete: "off", spellcheck: false, "aria-describedby": `${id}-error` });
      const error = h("p", { id: `${id}-error`, className: "field-error" });
      input.addEventListener("input", () => this.#rebuild());
      this.#fields.set(name, { input, error });
      return h("div", { className: "field" }, h("label", { for: id }, name), input, error);
    });
    this.#params.replaceChildren(...fields);
    this.#params.setAttribute("aria-label", `parameters of ${algorithm}`);
  }

  /**
   * Makes the limit the fields describe, on a fresh prefix, and starts the counts over; a parameter the
   * library rejects shows its error next to its field, and no request is sent until it is fixed.
   */
  #rebuild() {
    const { MultiRegionRatelimit, Redis } = this.#library;
    this.#ratelimit = null;
    this.#generation += 1;
    this.#prefix = `${this.#session}:regions:${this.#generation}`;
    this.element.dataset.prefix = this.#prefix;
    this.element.querySelector("#regions-prefix").textContent = this.#prefix;
    this.#requests = new Requests(this.#prefix);
    for (const region of this.#regions) region.requests = this.#requests;
    this.#counts = { allowed: 0, denied: 0, byRegion: this.#regions.map(() => 0) };
    this.#sent = 0;
    this.#merging.clear();
    this.#held = null;
    this.#table.replaceChildren();
    this.#logBuffer = [];
    this.#log.replaceChildren();
    for (const { input, error } of this.#fields.values()) showError(input, error, null);
    showError(null, this.#limiterError, null);
    const algorithm = this.#algorithm.value;
    try {
      const args = factoryArgs(algorithm, [...this.#fields.values()].map(({ input }) => input.value));
      const limiter = this.#library[FACTORIES[algorithm]][algorithm](...args);
      const redis = this.#regions.map((region) => new Redis(region.config));
      this.#ratelimit = new MultiRegionRatelimit({ redis, limiter, prefix: this.#prefix, ephemeralCache: false });
    } catch (error) {
      const named = this.#fields.get(/`(\w+)`/.exec(error.message)?.[1]);
      if (named) showError(named.input, named.error, error);
      else showError(null, this.#limiterError, error);
    }
  }

  /** Sends `count` requests of the identifier field at once; a rejection shows next to the field. */
  #sendByHand(count) {
    showError(this.#identifier, this.#identifierError, null);
    for (let i = 0; i < count; i++) this.#send(this.#identifier.value, this.#identifierError);
  }

  /**
   * Asks the limit about one request of `identifier`: counts the answer when it comes (with the region
   * that gave it), then follows its merge until `pending` settles. A rejection (a bad identifier) shows
   * in `errorOutput` when given; answers of a limit made before the last rebuild are dropped.
   */
  #send(identifier, errorOutput) {
    const ratelimit = this.#ratelimit;
    if (!ratelimit) return;
    const generation = this.#generation;
    const requests = this.#requests;
    const request = { identifier, id: null, replies: [], answeredBy: null };
    requests.add(request);
    const answer = ratelimit.limit(identifier);
    const done = (async () => {
      let response;
      try {
        response = await answer;
      } catch (error) {
        requests.drop(request);
        if (errorOutput) showError(this.#identifier, errorOutput, error);
        else console.error(error);
        return;
      }
      if (generation !== this.#generation) return;
      this.#sent += 1;
      const { success, remaining, reset, limit, reason, pending } = response;
      const decision = {
        lane: "regions",
        prefix: this.#prefix,
        n: this.#sent,
        identifier,
        id: request.id,
        success,
        remaining,
        reset,
        limit,
        reason: reason ?? null,
        region: request.answeredBy,
        heard: request.replies.map((reply) => reply.region),
        replies: request.replies,
        settled: false,
      };
      this.#counts[success ? "allowed" : "denied"] += 1;
      if (decision.region !== null) this.#counts.byRegion[decision.region] += 1;
      this.#record(decision);
      const by = decision.region === null ? `the fail mode (${decision.reason})` : `region ${decision.region}`;
      const state = h("span", {}, "merging…");
      const item = h("li", { "data-n": String(decision.n) }, `${new Date().toLocaleTimeString()} #${decision.n} ${identifier}: ${success ? "allowed" : "denied"} by ${by}, remaining ${remaining}; `, state);
      this.#logBuffer.push(item);
      this.#merging.add(decision);
      await pending;
      requests.settled(request);
      this.#merging.delete(decision);
      decision.settled = true;
      state.textContent = "merged";
    })();
    this.#inflight.add(done);
    done.finally(() => this.#inflight.delete(done));
  }

  /** Reads what every region holds under the current prefix, then shows it. */
  async #read(now) {
    this.#reading = true;
    this.#readAt = now;
    const prefix = this.#prefix;
    try {
      const held = await Promise.all(this.#regions.map((region) => region.read(prefix)));
      if (prefix === this.#prefix) {
        this.#held = held;
        this.#showHeld();
      }
      showError(null, this.#readError, null);
    } catch (error) {
      showError(null, this.#readError, error);
    } finally {
      this.#reading = false;
    }
  }

  /** Fills the table: per identifier, the ids each region holds in the newest window any region has. */
  #showHeld() {
    const start = `${this.#prefix}:`;
    const newest = new Map();
    for (const hashes of this.#held) {
      for (const key of Object.keys(hashes)) {
        const match = /^(.*?)(?::bucket)?:(\d+)$/.exec(key.slice(start.length));
        if (!match) continue;
        const [, identifier, window] = match;
        if (!newest.has(identifier) || Number(window) > Number(newest.get(identifier).window)) newest.set(identifier, { key, window });
      }
    }
    const rows = [...newest.entries()].sort(([a], [b]) => a.localeCompare(b, undefined, { numeric: true })).map(([identifier, { key }]) => {
      const ids = this.#held.map((hashes) => Object.keys(hashes[key] ?? {}).filter((field) => REQUEST_ID.test(field)).sort());
      const same = ids.every((list) => list.join() === ids[0].join());
      return h(
        "tr",
        { "data-identifier": identifier, "data-same": String(same) },
        h("th", { scope: "row" }, identifier),
        ...ids.map((list, i) => h("td", { "data-region": String(i), "data-ids": String(list.length) }, String(list.length))),
        h("td", { className: same ? "same" : "differ" }, same ? "same ids" : "differ"),
      );
    });
    this.#table.replaceChildren(...rows);
  }

  /** The request fields `names`, or null after showing what is wrong next to a field. */
  #settings(names) {
    const settings = {};
    for (const name of names) {
      const { label, min, max } = REQUEST_FIELDS[name];
      const input = this.#inputs[name];
      const value = Number(input.value);
      const whole = name !== "rate";
      const bad = input.value.trim() === "" || !Number.isFinite(value) || value < min || value > max || (whole && !Number.isInteger(value));
      showError(input, this.#errors[name], bad ? new RangeError(`${label} must be ${whole ? "a whole number" : "a number"} from ${min} to ${max}, got ${JSON.stringify(input.value)}`) : null);
      settings[name] = value;
    }
    return names.some((name) => this.#errors[name].textContent) ? null : settings;
  }

  #start() {
    const settings = this.#settings(["clients", "rate"]);
    if (!settings) return;
    this.#traffic.start(settings);
    this.#run.textContent = "Stop";
  }

  #stop() {
    this.#traffic.stop();
    this.#run.textContent = "Start";
  }
}

/** Sets `element`'s text when it changed. */
function set(element, text) {
  if (element.textContent !== text) element.textContent = text;
}
