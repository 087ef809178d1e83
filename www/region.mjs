// The regions of the multi-region view as the page sees them: the `fetch` each region's `Redis` is
// given, which holds every request for the region's one-way delay on the way there and again on the
// way back and notes which of the view's requests each reply decides, and a direct read, through the
// gateway with the region's token, of what the region holds.

/** A request id as MultiRegionRatelimit writes it in a hash: 32 hex digits, after `<time µs>:` in a bucket. */
export const REQUEST_ID = /^(\d+:)?[0-9a-f]{32}$/;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The view's requests of one limiter (one key prefix), found again in the commands sent to the regions.
 *
 * Each `limit()` sends every region one decision: a script whose first key is
 * `<prefix>:<identifier>:<window>` (`…:bucket:<epoch>` for the buckets) and whose arguments (seven or
 * more) hold one request id never sent before. The decisions are queued in the order of the `limit()`
 * calls, so the n-th new id of an identifier is its n-th request. A merge carries ids already sent
 * (alone: with its cost and a TTL, three arguments), and a decision sent again as EVAL (Redis did not
 * know the script yet) carries its own id again.
 */
export class Requests {
  #prefix;
  #waiting = new Map();
  #byId = new Map();

  /** Requests of the limiter on `prefix`. */
  constructor(prefix) {
    this.#prefix = `${prefix}:`;
  }

  /** Notes `request` (`{ identifier, id: null, replies: [], answeredBy: null }`), about to be sent. */
  add(request) {
    const queue = this.#waiting.get(request.identifier) ?? [];
    queue.push(request);
    this.#waiting.set(request.identifier, queue);
  }

  /** Forgets `request`, which `limit()` refused before sending it anywhere. */
  drop(request) {
    const queue = this.#waiting.get(request.identifier) ?? [];
    if (queue.includes(request)) queue.splice(queue.indexOf(request), 1);
  }

  /** Forgets `request`, whose merges have settled: no decision of it is sent again. */
  settled(request) {
    this.#byId.delete(request.id);
  }

  /** The request whose decision `command` is, or null (a merge, another limiter's command). */
  of(command) {
    if (command[0] !== "EVALSHA" && command[0] !== "EVAL") return null;
    const keyCount = Number(command[2]);
    const [key] = command.slice(3, 3 + keyCount);
    const args = command.slice(3 + keyCount);
    const ids = args.filter((arg) => REQUEST_ID.test(arg));
    if (!key?.startsWith(this.#prefix) || ids.length !== 1 || args.length < 7) return null;
    const [id] = ids;
    const known = this.#byId.get(id);
    if (known) return known;
    const identifier = /^(.*?)(?::bucket)?:\d+$/.exec(key.slice(this.#prefix.length))?.[1];
    const request = this.#waiting.get(identifier)?.shift();
    if (!request) return null;
    request.id = id;
    this.#byId.set(id, request);
    return request;
  }
}

/** One region: its one-way delay, the `fetch` that applies it, and what is on its way there. */
export class Region {
  /** The region's number, from 0. */
  index;
  /** The one-way delay between this page and the region, in milliseconds. */
  delay = 0;
  /** The view's requests of the current limiter (a `Requests`), or null. */
  requests = null;
  /** Decisions and merges sent and not yet back. */
  onTheWay = { decisions: 0, merges: 0 };
  #url;
  #token;

  /** Region `index`, reached through the gateway at `url` with `token`. */
  constructor(index, url, token) {
    this.index = index;
    this.#url = url;
    this.#token = token;
  }

  /** The settings of this region's `Redis`, whose requests go through `fetch`. */
  get config() {
    return { url: this.#url, token: this.#token, fetch: this.fetch };
  }

  /**
   * The region's `fetch`: waits `delay`, sends, reads the reply, waits `delay` again, notes each
   * decision's reply on its request, then hands the reply over. The wait on the way back ends in a
   * timer of its own, so one reply is handed over at a time and the first noted is the first the
   * limiter reads: the region that answers.
   */
  fetch = async (url, init) => {
    const commands = JSON.parse(init.body);
    const decided = commands.map((command) => this.requests?.of(command) ?? null);
    const decisions = decided.filter(Boolean).length;
    this.onTheWay.decisions += decisions;
    this.onTheWay.merges += commands.length - decisions;
    try {
      await sleep(this.delay);
      // Without keepalive: a page that stays open needs none, and Chrome refuses keepalive requests
      // once those in flight carry 64 KiB of bodies together.
      const response = await fetch(url, { ...init, keepalive: false });
      const body = await response.arrayBuffer();
      await sleep(this.delay);
      this.#note(decided, response.status, body);
      return { status: response.status, arrayBuffer: async () => body };
    } catch (error) {
      for (const request of decided) request?.replies.push({ region: this.index, error: String(error) });
      throw error;
    } finally {
      this.onTheWay.decisions -= decisions;
      this.onTheWay.merges -= commands.length - decisions;
    }
  };

  /** Notes the reply of each decision in `decided` (a `/pipeline` reply: one `{ result }` per command). */
  #note(decided, status, body) {
    let replies = [];
    try {
      replies = status === 200 ? JSON.parse(new TextDecoder().decode(body)) : [];
    } catch {
      // Not JSON: the limiter reports it; nothing was decided here.
    }
    decided.forEach((request, n) => {
      const reply = replies[n];
      if (!request || !reply || String(reply.error ?? "").startsWith("NOSCRIPT")) return;
      const decision = Array.isArray(reply.result) ? { region: this.index, admitted: reply.result[0] === 1 } : { region: this.index, error: String(reply.error) };
      request.replies.push(decision);
      if (request.answeredBy === null && !decision.error) request.answeredBy = this.index;
    });
  }

  /** Every hash under `prefix` as the region holds it now, read directly: key → { field: cost }. */
  async read(prefix) {
    const [keys] = await this.#pipeline([["KEYS", `${prefix}:*`]]);
    if (keys.length === 0) return {};
    const hashes = await this.#pipeline(keys.map((key) => ["HGETALL", key]));
    return Object.fromEntries(keys.map((key, n) => {
      const fields = {};
      for (let f = 0; f < hashes[n].length; f += 2) fields[hashes[n][f]] = hashes[n][f + 1];
      return [key, fields];
    }));
  }

  async #pipeline(commands) {
    const response = await fetch(`${this.#url}/pipeline`, {
      method: "POST",
      headers: { authorization: `Bearer ${this.#token}` },
      body: JSON.stringify(commands),
    });
    const replies = await response.json();
    if (!response.ok || !Array.isArray(replies)) throw new Error(`region ${this.index}: ${response.status} ${JSON.stringify(replies)}`);
    return replies.map(({ result, error }) => {
      if (error) throw new Error(`region ${this.index}: ${error}`);
      return result;
    });
  }
}
