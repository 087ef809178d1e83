// The comparison view: the same requests go to one limiter per algorithm, side by side, sent by hand
// ("Send one") or at a chosen rate from several simulated clients, with each limiter's counts, last
// remaining/reset and chart, and the last answers.
import { h, showError } from "../dom.mjs";
import { ALGORITHMS, Lane } from "../lane.mjs";
import { Traffic } from "../traffic.mjs";

/** How many answers the "Last answers" list keeps. */
const LOG_LENGTH = 50;
/** The least time between two updates of the totals read out to screen readers, in milliseconds. */
const SUMMARY_EVERY_MS = 2000;

/** Bounds of the traffic fields, checked by the page (they are not the library's parameters). */
const TRAFFIC_FIELDS = {
  clients: { label: "simulated clients", value: 3, min: 1, max: 10, step: 1 },
  rate: { label: "requests per second, each", value: 2, min: 0.1, max: 20, step: 0.1 },
};

/** Every algorithm side by side under the same traffic. */
export class CompareView {
  /** The view's section, to put on the page. */
  element;
  #lanes;
  #record;
  #traffic;
  #identifier;
  #identifierError;
  #inputs = {};
  #errors = {};
  #run;
  #summary;
  #summaryAt = 0;
  #log;
  #logBuffer = [];

  /** `library` is the package (`{ Ratelimit }`); `record(decision)` sees every counted decision. */
  constructor(library, record) {
    this.#record = record;
    this.#lanes = Object.keys(ALGORITHMS).map((algorithm) => new Lane(algorithm, library, (decision) => this.#answered(decision)));
    this.#traffic = new Traffic((identifier) => this.#sendAll(identifier, null));

    this.#identifier = h("input", { id: "identifier", value: "client-1", autocomplete: "off", spellcheck: false, "aria-describedby": "identifier-error" });
    this.#identifierError = h("p", { id: "identifier-error", className: "field-error" });
    const sendOne = h("button", { type: "button", id: "send-one", className: "primary" }, "Send one");
    sendOne.addEventListener("click", () => this.#sendAll(this.#identifier.value, this.#identifierError));
    this.#identifier.addEventListener("keydown", (event) => {
      if (event.key === "Enter") sendOne.click();
    });

    const trafficFields = Object.entries(TRAFFIC_FIELDS).map(([name, { label, ...bounds }]) => {
      this.#inputs[name] = h("input", { id: name, type: "number", inputMode: "decimal", ...bounds, "aria-describedby": `${name}-error` });
      this.#errors[name] = h("p", { id: `${name}-error`, className: "field-error" });
      this.#inputs[name].addEventListener("input", () => this.#trafficSettings() && this.#traffic.running && this.#start());
      return h("div", { className: "field" }, h("label", { for: name }, label), this.#inputs[name], this.#errors[name]);
    });
    this.#run = h("button", { type: "button", id: "run", className: "primary" }, "Start");
    this.#run.addEventListener("click", () => (this.#traffic.running ? this.#stop() : this.#start()));
    const startOver = h("button", { type: "button", id: "start-over" }, "Start over");
    startOver.addEventListener("click", () => this.startOver());

    this.#summary = h("p", { id: "summary", className: "visually-hidden", "aria-live": "polite" });
    this.#log = h("ol", { id: "log", tabIndex: 0, "aria-labelledby": "log-title" });
    this.element = h(
      "section",
      { className: "view", "aria-labelledby": "compare-title" },
      h("h2", { id: "compare-title" }, "Algorithms side by side"),
      h(
        "div",
        { className: "controls", role: "group", "aria-labelledby": "requests-title" },
        h("h3", { id: "requests-title" }, "Requests"),
        h("div", { className: "by-hand" }, h("div", { className: "field" }, h("label", { for: "identifier" }, "identifier"), this.#identifier, this.#identifierError), sendOne),
        h("div", { className: "at-rate" }, ...trafficFields, this.#run, startOver),
        h("p", { className: "about" }, "Each request goes to every ticked limiter. The simulated clients are client-1, client-2, and so on. “Start over” forgets every count."),
        this.#summary,
      ),
      h("div", { className: "lanes" }, ...this.#lanes.map((lane) => lane.element)),
      h("h3", { id: "log-title" }, "Last answers"),
      this.#log,
    );
  }

  /** Uses `store` (`{ redis, session }`) for every limiter from now on, starting over. */
  setStore(store) {
    for (const lane of this.#lanes) lane.setStore(store);
    this.#log.replaceChildren();
  }

  /** Forgets every count: each limiter starts again on a fresh prefix. */
  startOver() {
    for (const lane of this.#lanes) lane.rebuild();
    this.#logBuffer = [];
    this.#log.replaceChildren();
  }

  /** Resolves once every request sent so far is answered. */
  async settled() {
    await Promise.all(this.#lanes.map((lane) => lane.settled()));
  }

  /** Updates counts, charts, the summary and the list of answers. */
  render(now) {
    for (const lane of this.#lanes) lane.render(now);
    const summary = `${this.#lanes.map((lane) => lane.summary()).join(". ")}.`;
    if (this.#summary.textContent !== summary && now - this.#summaryAt >= SUMMARY_EVERY_MS) {
      this.#summary.textContent = summary;
      this.#summaryAt = now;
    }
    if (this.#logBuffer.length > 0) {
      const items = this.#logBuffer.slice(-LOG_LENGTH).reverse().map((text) => h("li", {}, text));
      this.#log.prepend(...items);
      while (this.#log.children.length > LOG_LENGTH) this.#log.lastChild.remove();
      this.#logBuffer = [];
    }
  }

  /** Sends one request of `identifier` to every ready lane; a rejection shows in `errorOutput` when given. */
  #sendAll(identifier, errorOutput) {
    if (errorOutput) showError(this.#identifier, errorOutput, null);
    for (const lane of this.#lanes) {
      if (!lane.ready) continue;
      lane.send(identifier).catch((error) => {
        if (errorOutput) showError(this.#identifier, errorOutput, error);
        else console.error(error);
      });
    }
  }

  #answered(decision) {
    const { lane, identifier, success, remaining, reason } = decision;
    const time = new Date().toLocaleTimeString();
    this.#logBuffer.push(`${time} ${lane} ${identifier}: ${success ? "allowed" : "denied"}, remaining ${remaining}${reason ? ` (${reason})` : ""}`);
    this.#record(decision);
  }

  /** The traffic fields' values, or null after showing what is wrong next to the field. */
  #trafficSettings() {
    const settings = {};
    for (const [name, { min, max }] of Object.entries(TRAFFIC_FIELDS)) {
      const input = this.#inputs[name];
      const value = Number(input.value);
      const whole = name === "clients";
      const bad = input.value.trim() === "" || !Number.isFinite(value) || value < min || value > max || (whole && !Number.isInteger(value));
      const error = bad ? new RangeError(`${TRAFFIC_FIELDS[name].label} must be ${whole ? "a whole number" : "a number"} from ${min} to ${max}, got ${JSON.stringify(input.value)}`) : null;
      showError(input, this.#errors[name], error);
      settings[name] = value;
    }
    return Object.values(this.#errors).some((output) => output.textContent) ? null : settings;
  }

  #start() {
    const settings = this.#trafficSettings();
    if (!settings) return;
    this.#traffic.start(settings);
    this.#run.textContent = "Stop";
  }

  #stop() {
    this.#traffic.stop();
    this.#run.textContent = "Start";
  }
}
