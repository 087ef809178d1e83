// The playground's logic: the package's browser entry, an in-memory Ratelimit per chosen limiter, and
// the counts of what each decided. Served with the package by serve.mjs (`make www`).
import { Ratelimit } from "./pkg/index.web.js";

/** Each algorithm's factory arguments, in order; the third only for the bucket algorithms. */
const PARAMS = {
  fixedWindow: ["tokens", "window"],
  slidingWindow: ["tokens", "window"],
  cachedFixedWindow: ["tokens", "window"],
  tokenBucket: ["refillRate", "interval", "maxTokens"],
  gcra: ["limit", "period", "burst"],
};

const $ = (id) => document.getElementById(id);
/** Per limiter (its description, e.g. `gcra(5, "10 s", { burst: 5 })`): the Ratelimit and its counts. */
const limiters = new Map();

/** A field's text as the library should see it: a number when it reads as one, else the text itself. */
function value(text) {
  const trimmed = text.trim();
  return trimmed !== "" && Number.isFinite(Number(trimmed)) ? Number(trimmed) : trimmed;
}

function showParams() {
  const names = PARAMS[$("algorithm").value];
  $("first-name").textContent = names[0];
  $("second-name").textContent = names[1];
  $("third-field").hidden = names.length < 3;
  if (names[2]) $("third-name").textContent = names[2];
}

/** The limiter the form describes, made (and checked by the library) on first use. */
function chosenLimiter() {
  const algorithm = $("algorithm").value;
  const args = [value($("first").value), value($("second").value)];
  if (algorithm === "tokenBucket") args.push(value($("third").value));
  if (algorithm === "gcra") args.push({ burst: value($("third").value) });
  const name = `${algorithm}(${args.map((arg) => JSON.stringify(arg).replaceAll('"burst"', "burst")).join(", ")})`;
  if (!limiters.has(name)) {
    // Throws a TypeError or RangeError naming the bad parameter.
    const limiter = Ratelimit[algorithm](...args);
    limiters.set(name, { ratelimit: new Ratelimit({ limiter }), allowed: 0, denied: 0, remaining: null, reset: null });
  }
  return [name, limiters.get(name)];
}

async function fire(event) {
  event.preventDefault();
  $("error").textContent = "";
  try {
    const [name, entry] = chosenLimiter();
    const identity = $("identity").value;
    const count = Math.max(1, Math.min(1000, Number($("count").value) || 1));
    for (let i = 0; i < count; i++) {
      const { success, remaining, reset, reason } = await entry.ratelimit.limit(identity);
      entry[success ? "allowed" : "denied"] += 1;
      entry.remaining = remaining;
      entry.reset = reset;
      log(`${name} ${identity}: ${success ? "allowed" : "denied"}, remaining ${remaining}${reason ? ` (${reason})` : ""}`, success);
    }
  } catch (error) {
    $("error").textContent = `${error.name}: ${error.message}`;
  }
  render();
}

function log(text, success) {
  const item = document.createElement("li");
  item.className = success ? "allowed" : "denied";
  item.textContent = text;
  $("log").prepend(item);
  while ($("log").children.length > 100) $("log").lastChild.remove();
}

function render() {
  const rows = [...limiters].map(([name, { allowed, denied, remaining, reset }]) => {
    const row = document.createElement("tr");
    row.dataset.limiter = name;
    const resetIn = reset === null ? "" : `${Math.max(0, (reset - Date.now()) / 1000).toFixed(1)} s`;
    for (const [cell, className] of [[name, "name"], [allowed, "allowed"], [denied, "denied"], [remaining ?? "", "remaining"], [resetIn, "reset"]]) {
      const td = document.createElement("td");
      td.className = className;
      td.textContent = String(cell);
      row.append(td);
    }
    return row;
  });
  $("counts").replaceChildren(...rows);
}

$("algorithm").addEventListener("change", showParams);
$("config").addEventListener("submit", fire);
$("clear").addEventListener("click", () => {
  limiters.clear();
  $("log").replaceChildren();
  $("error").textContent = "";
  render();
});
// "reset in" counts down.
setInterval(render, 500);
showParams();
$("fire").disabled = false;
$("status").textContent = "Ready.";
document.body.dataset.ready = "true";
