// The JavaScript half of edgelimit's boundary (see src/wasm/mod.rs): work that costs one crossing from
// Rust when done here, and many when done from Rust one property at a time. Imported by src/js/boundary.rs.

/** The `pending` of an answer that leaves no work behind: one settled Promise shared by all. */
const SETTLED = Promise.resolve();

/** `{ success, limit, remaining, reset, pending, reason? }`, the answer of `limit()`. */
export function limitResponse(success, limit, remaining, reset, pending, reason) {
  const response = { success, limit, remaining, reset, pending: pending ?? SETTLED };
  if (reason !== undefined) response.reason = reason;
  return response;
}

/** `{ remaining, reset, limit }`, the answer of `getRemaining()`. */
export function remainingResponse(remaining, reset, limit) {
  return { remaining, reset, limit };
}

/**
 * Sets `answer.limits`, each limit's answer among several: `{ success, limit, remaining, reset, dryRun }`
 * from each 5 numbers of `numbers` (the booleans as 1 or 0).
 */
export function setLimits(answer, numbers) {
  const limits = [];
  for (let at = 0; at < numbers.length; at += 5) {
    const [success, limit, remaining, reset, dryRun] = numbers.subarray(at, at + 5);
    limits.push({ success: success === 1, limit, remaining, reset, dryRun: dryRun === 1 });
  }
  answer.limits = limits;
}

/** Sets `answer.live`, what live limits would have answered: `{ success, limit, remaining, reset, reason? }`. */
export function setLive(answer, success, limit, remaining, reset, reason) {
  const live = { success, limit, remaining, reset };
  if (reason !== undefined) live.reason = reason;
  answer.live = live;
}

/** Sets `answer.limits` of `getRemaining()`: `{ remaining, reset, limit }` from each 3 numbers of `numbers`. */
export function setRemainingLimits(answer, numbers) {
  const limits = [];
  for (let at = 0; at < numbers.length; at += 3) {
    limits.push({ remaining: numbers[at], reset: numbers[at + 1], limit: numbers[at + 2] });
  }
  answer.limits = limits;
}

/**
 * Whether the string `text` is well-formed Unicode: no lone surrogate, which the text's UTF-8 for
 * Redis would turn into U+FFFD, making two identifiers one.
 */
export function isWellFormed(text) {
  if (typeof text.isWellFormed === "function") return text.isWellFormed();
  return !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);
}

/** The key of a limiter object's tag, whose value is the algorithm's place (src/wasm/algorithms.rs). */
const LIMITER_TAG = "edgelimit.limiter";

/** A limiter object of `Ratelimit.<factory>`: `{ algorithm, params }`, frozen, tagged with `place`. */
export function limiterObject(place, algorithm, params) {
  return Object.freeze({ [LIMITER_TAG]: place, algorithm, params: Object.freeze(Array.from(params)) });
}

/** The tag of `value` if it is an object (a limiter object's is a number), else undefined. */
export function limiterPlace(value) {
  return typeof value === "object" && value !== null ? value[LIMITER_TAG] : undefined;
}

/** The headers of every request to one server, built once per `Redis` and shared by its requests. */
export function requestHeaders(authorization) {
  return { Authorization: authorization, "Content-Type": "application/json" };
}

/**
 * Browsers refuse a `keepalive` request (fail its fetch) once the bodies of the `keepalive` requests in
 * flight would pass 64 KiB, so a request is sent `keepalive` only while its body fits what is left.
 * Bodies are counted at 3 bytes per UTF-16 unit, the most UTF-8 takes.
 */
const KEEPALIVE_BUDGET = 64 * 1024;
let keepaliveInFlight = 0;

/**
 * POSTs `body` to `url` with `fetch` (the global one when `fetch` is undefined), then calls
 * `deliver(id, status, bytes)`, or `deliver(id, -1, [stage, error])` on failure, `stage` saying what
 * failed. With `abort` > 0 (ms), after that long the request is aborted and delivered as
 * `["timeout"]`, even when a custom `fetch` ignores the signal. With a shorter `timeout` > 0 (the rest
 * of a call's time, for an EVAL after NOSCRIPT), `["timeout"]` is delivered then, while the request runs
 * on until `abort` (so that its script is loaded for the next calls). `deliver` is one function for
 * every request, so no callback is made per request on the Rust side. Never throws: what throws while
 * the request is started (a runtime without `AbortController` or timers) is delivered as
 * `["sending the request threw", error]`, so that Rust needs no guard around the call.
 */
export function post(fetch, url, headers, body, abort, timeout, id, deliver) {
  try {
    startPost(fetch, url, headers, body, abort, timeout, id, deliver);
  } catch (error) {
    deliver(id, -1, [UNSTARTED, error]);
  }
}

/** The stage of a request that threw while it was started. */
const UNSTARTED = "sending the request threw";

/** `post`, which may throw while it starts the request, before anything waits on it. */
function startPost(fetch, url, headers, body, abort, timeout, id, deliver) {
  const early = timeout > 0 && !(abort > 0 && abort <= timeout);
  if (!early) return postAborting(fetch, url, headers, body, abort, id, deliver);
  // The rare early answer: the first of the reply and this timer is delivered.
  let answered = false;
  const answer = (answerId, status, value) => {
    clearTimeout(timer);
    if (answered) return;
    answered = true;
    deliver(answerId, status, value);
  };
  const timer = setTimeout(answer, timeout, id, -1, ["timeout"]);
  postAborting(fetch, url, headers, body, abort, id, answer);
}

/** `post` without an early answer: delivered once, aborted after `abort` ms > 0. */
function postAborting(fetch, url, headers, body, abort, id, deliver) {
  const weight = body.length * 3;
  const keepalive = keepaliveInFlight + weight <= KEEPALIVE_BUDGET;
  if (keepalive) keepaliveInFlight += weight;
  const init = { method: "POST", headers, body, keepalive };
  request(fetch, url, init, keepalive ? weight : 0, abort, id, deliver);
}

/**
 * GETs `url` with `fetch` (the global one when undefined), delivered as `post` delivers: `deliver(id,
 * status, bytes)`, or `deliver(id, -1, [stage, error])`, `["timeout"]` once aborted after `abort` ms > 0.
 * Never throws, as `post`.
 */
export function get(fetch, url, abort, id, deliver) {
  try {
    request(fetch, url, { method: "GET" }, 0, abort, id, deliver);
  } catch (error) {
    deliver(id, -1, [UNSTARTED, error]);
  }
}

/** Sends `init` to `url`, delivered once, aborted after `abort` ms > 0; `held` as `send` takes it. */
function request(fetch, url, init, held, abort, id, deliver) {
  if (!(abort > 0)) {
    send(fetch, url, init, held, (status, value) => deliver(id, status, value));
    return;
  }
  const reused = REUSE_CONTROLLERS && idleControllers.length > 0;
  const controller = reused ? idleControllers.pop() : new AbortController();
  const used = reused ? idleUses.pop() : 0;
  init.signal = controller.signal;
  // The first of the reply and the deadline is delivered; the other is dropped.
  let done = false;
  let timer;
  let watched;
  const finish = (status, value) => {
    if (done) return;
    done = true;
    if (!SHARE_TIMER) clearTimeout(timer);
    else if (watched !== undefined) unwatch(watched);
    release(controller, used + 1);
    deliver(id, status, value);
  };
  const expire = () => {
    controller.abort();
    finish(-1, ["timeout"]);
  };
  // Once the deadline may be registered, a throw is this request's failure: `finish` also takes its
  // deadline back, which would otherwise expire a later request given the same id.
  try {
    if (SHARE_TIMER) watched = watch(expire, abort);
    else timer = setTimeout(expire, abort);
  } catch (error) {
    keepaliveInFlight -= held;
    return finish(-1, [UNSTARTED, error]);
  }
  send(fetch, url, init, held, finish);
}

/**
 * Whether this is Node, where what a request costs can be shared between requests: not Cloudflare
 * Workers, which refuse an object made during another request (and make one cheaply), nor other
 * runtimes that may isolate requests alike. workerd with Node compatibility looks like Node, so its
 * user agent rules it out.
 */
const NODE =
  globalThis.process?.release?.name === "node" && globalThis.navigator?.userAgent !== "Cloudflare-Workers";

/**
 * In Node one timer serves every request in flight, armed for the earliest deadline: arming and
 * clearing a timer per request costs Node more than the rest of the request's JavaScript. It keeps
 * the process alive only while a request is in flight. Elsewhere each request arms its own timer.
 */
const SHARE_TIMER = NODE;
/**
 * The requests in flight with a deadline, as `{ at, expire }` (`at` from `performance.now()`, ms), a
 * finished one's `expire` cleared. An array rather than a `Map` keyed by `expire`: a Map that gains and
 * loses a key per request rebuilds its table every few requests (about 6% of a decision's CPU on one
 * caller). Emptied whenever nothing is in flight, compacted in place once finished entries outnumber
 * the live ones, so it holds at most about twice the requests in flight.
 */
const deadlines = [];
let live = 0;
let sweeper;
let sweepAt = Infinity;

/** Registers `expire` to be called `abort` ms from now; returns what `unwatch` takes back. */
function watch(expire, abort) {
  const at = performance.now() + abort;
  if (at < sweepAt) armSweeper(at);
  if (live === 0) {
    deadlines.length = 0;
    sweeper?.ref();
  } else if (deadlines.length > 2 * live + 64) {
    let kept = 0;
    for (const entry of deadlines) if (entry.expire !== undefined) deadlines[kept++] = entry;
    deadlines.length = kept;
  }
  const entry = { at, expire };
  deadlines.push(entry);
  live += 1;
  return entry;
}

/** Takes back the deadline `watch` registered as `entry`. */
function unwatch(entry) {
  entry.expire = undefined;
  live -= 1;
  if (live === 0) sweeper?.unref();
}

function armSweeper(at) {
  clearTimeout(sweeper);
  sweepAt = Infinity; // until armed again: a timer that failed to arm is tried again by the next request
  sweeper = setTimeout(sweep, Math.max(0, at - performance.now()));
  sweepAt = at;
}

/** Expires the requests past their deadline, then waits for the next deadline. */
function sweep() {
  sweepAt = Infinity;
  const now = performance.now();
  let next = Infinity;
  const due = [];
  for (const { at, expire } of deadlines) {
    if (expire === undefined) continue;
    if (at <= now) due.push(expire);
    else if (at < next) next = at;
  }
  for (const expire of due) expire();
  if (next !== Infinity) armSweeper(next);
}

/**
 * AbortControllers whose request finished without being aborted, for the next requests: in Node, making
 * one costs more than the rest of a request. A controller serves one request at a time, so a timeout
 * aborts only its own request, and at most `CONTROLLER_USES` requests in all, since Node's `fetch`
 * leaves a listener on the signal until its request is garbage-collected. Node only (`NODE`).
 */
const REUSE_CONTROLLERS = NODE;
const idleControllers = [];
/** How many requests each of `idleControllers` has served, at the same index. */
const idleUses = [];
const CONTROLLER_USES = 256;

/** Keeps `controller`, which has served `used` requests, for the next request if it may serve more. */
function release(controller, used) {
  if (!REUSE_CONTROLLERS) return;
  if (controller.signal.aborted || used >= CONTROLLER_USES || idleControllers.length >= 64) return;
  idleControllers.push(controller);
  idleUses.push(used);
}

/**
 * Sends the request and hands `finish` the status and the body's bytes, or -1 and what failed; gives
 * back the `held` bytes of the keepalive budget once the fetch settles.
 *
 * A `fetch` that rejects is an outage, since the platform's own rejects so (with a `TypeError`) when
 * the network fails. A `fetch` that breaks its contract is a programming error, delivered as
 * `[stage, error, true]`, which no fail mode answers: one that throws instead of returning a Promise
 * (the platform's never does; so does a `fetch` that is no function), resolves to something that is
 * not a Response (no numeric `status`, no `arrayBuffer()` nor `text()`, a getter that throws), or hands
 * back a body already read (`bodyUsed`: the platform never does; a wrapper that read it to log it did).
 */
async function send(fetch, url, init, held, finish) {
  const call = fetch ?? globalThis.fetch;
  const misused = (what, value) => finish(-1, [`the ${fetch ? "custom" : "global"} \`fetch\` ${what}`, value, true]);
  let response;
  try {
    response = call.call(globalThis, url, init);
  } catch (error) {
    keepaliveInFlight -= held;
    return misused("threw instead of returning a Promise", error);
  }
  try {
    response = await response;
  } catch (error) {
    return finish(-1, ["fetch failed", error]);
  } finally {
    keepaliveInFlight -= held;
  }
  let status;
  let read;
  try {
    status = response.status;
    if (response.bodyUsed === true) return misused("handed back a Response whose body was already read (bodyUsed)", response);
    read = typeof response.arrayBuffer === "function" ? "arrayBuffer" : typeof response.text === "function" && "text";
  } catch {}
  if (typeof status !== "number" || !read) return misused("resolved to something other than a Response", response);
  let bytes;
  try {
    // A Response has arrayBuffer(); an object that only has text() is read as text.
    bytes = read === "arrayBuffer"
      ? new Uint8Array(await response.arrayBuffer())
      : new TextEncoder().encode(await response.text());
  } catch (error) {
    return finish(-1, ["reading the body failed", error]);
  }
  finish(status, bytes);
}

/** A limit option that `limit()` does not know, found by `limitRate`. */
export class UnknownOption {
  constructor(key) {
    this.key = key;
    /** Every option `limit()` knows, for the message that names the nearest. */
    this.known = LIMIT_OPTIONS;
  }
}

/** The options `limit()` knows: its own and `@upstash/ratelimit`'s. */
const LIMIT_OPTIONS = ["rate", "ip", "userAgent", "country", "geo", "cf", "request"];
const KNOWN_LIMIT_OPTIONS = new Set(LIMIT_OPTIONS);

/**
 * `options.rate`, or an `UnknownOption` naming the first key of `options` that `limit()` does not know:
 * one crossing that both checks the keys and reads the rate.
 */
export function limitRate(options) {
  for (const key in options) {
    if (!KNOWN_LIMIT_OPTIONS.has(key)) return new UnknownOption(key);
  }
  return options.rate;
}
