// The playground's entry: loads the package's browser entry, asks serve.mjs where the gateway and the
// regions are (/config.json), lets the person pick the store, and runs the views (one module each, in
// views/, each given the package's exports).
//
// `window.playground` is there for a curious person (and the browser test): `session` (the key prefix of
// this page), `decisions` (the last answers the page counted, up to 10 000, each `{ lane, prefix,
// identifier, slice, success, remaining, reset, limit, reason }`; the multi-region view's have `lane:
// "regions"`, the `region` that answered, the `id` of the request, the regions `heard` from when the
// answer came, every region's `replies` in the order they came, and `settled` once `pending` has) and
// `settled()` (resolves once every request sent so far is answered, and the multi-region view's merges
// have settled).
import { CompareView } from "./views/compare.mjs";
import { RegionsView } from "./views/regions.mjs";

/** How many decisions `window.playground.decisions` keeps. */
const KEEP_DECISIONS = 10_000;

const $ = (id) => document.getElementById(id);
const status = $("status");

/**
 * What serve.mjs says: `{ redis, regions }`, the gateway's `{ url, token }` and the regions' `{ url,
 * tokens }`, each null when it runs without them.
 */
async function serverConfig() {
  try {
    const response = await fetch("./config.json", { cache: "no-store" });
    if (response.ok) return await response.json();
  } catch {
    // Served without serve.mjs: the in-memory store only.
  }
  return { redis: null, regions: null };
}

async function main() {
  let library;
  try {
    library = await import("./pkg/index.web.js");
  } catch (error) {
    status.textContent = `Could not load the package (${error.message}); build it with make pkg.`;
    return;
  }
  const { redis: gateway, regions } = await serverConfig();
  const session = `edgelimit-www:${crypto.randomUUID().slice(0, 8)}`;
  const redis = gateway ? new library.Redis(gateway) : undefined;
  const decisions = [];
  const record = (decision) => {
    decisions.push(decision);
    if (decisions.length > KEEP_DECISIONS) decisions.splice(0, decisions.length - KEEP_DECISIONS);
  };

  const regionsView = new RegionsView(library, regions, record);
  const views = [new CompareView(library, record), regionsView];
  $("views").replaceChildren(...views.map((view) => view.element));
  regionsView.load();

  const redisChoice = $("store-redis");
  redisChoice.disabled = !redis;
  $("gateway").textContent = gateway ? `at ${gateway.url}` : "(not running: start the page with make www)";
  $("session").textContent = session;
  const store = () => ({ redis: redisChoice.checked ? redis : undefined, session });
  for (const choice of document.querySelectorAll("input[name=store]")) {
    choice.addEventListener("change", () => views.forEach((view) => view.setStore(store())));
  }
  views.forEach((view) => view.setStore(store()));

  const render = () => views.forEach((view) => view.render(Date.now()));
  setInterval(render, 250);
  render();

  window.playground = {
    session,
    decisions,
    settled: () => Promise.all(views.map((view) => view.settled())),
  };
  status.textContent = "Ready.";
  document.body.dataset.ready = "true";
}

main();
