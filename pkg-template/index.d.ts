/**
 * edgelimit — distributed rate limiting compiled from Rust to WebAssembly, with the API and the Redis
 * state layout of `@upstash/ratelimit` (migrating is an import change; both can share one limit).
 *
 * Every option is checked: a wrong type throws a `TypeError`, a value out of range a `RangeError`,
 * and the message names the field and quotes the value; an option the package does not know throws a
 * `TypeError` naming it and the nearest known name. Methods returning a Promise reject with those
 * errors instead of throwing.
 */

/**
 * A duration: `"10 s"`, `"10s"`, `"1.5 m"` (units ms, s, m, h, d, w; rounded to whole milliseconds as
 * `@upstash/ratelimit` rounds them, so `"1.5 ms"` is 2 ms), or a whole number of milliseconds.
 */
export type Duration = `${number} ${"ms" | "s" | "m" | "h" | "d" | "w"}` | `${number}${"ms" | "s" | "m" | "h" | "d" | "w"}` | number;

/**
 * A checked algorithm with its parameters, made by `Ratelimit.fixedWindow`, `slidingWindow`,
 * `tokenBucket`, `cachedFixedWindow` or `gcra`. Treat it as opaque: pass it as the `limiter` option.
 */
export interface Limiter {
  /** Which algorithm. */
  readonly algorithm: "fixedWindow" | "slidingWindow" | "tokenBucket" | "cachedFixedWindow" | "gcra";
  /** Its parameters (counts, and durations in milliseconds), in the order the factory takes them. */
  readonly params: readonly number[];
}

/** Settings of an Upstash-compatible REST server (Upstash Redis, or the self-hosted edgelimit gateway). */
export interface RedisConfig {
  /** The REST URL, starting with `https://` or `http://` (`UPSTASH_REDIS_REST_URL`). */
  url: string;
  /** The bearer token (`UPSTASH_REDIS_REST_TOKEN`). */
  token: string;
  /**
   * A `fetch` to use instead of the global one, called as `fetch(url, init)`; it must return a
   * Promise of a `Response` (or of an object with `status` and `text()`) whose body is unread. A
   * rejection is an outage, answered by `failMode` (the platform's `fetch` rejects so when the
   * network fails); a `fetch` that throws instead of returning a Promise, resolves to anything else,
   * or hands back a body it read (to log it, say) is a bug: the call rejects with a `TypeError`
   * naming the custom `fetch`, whatever `failMode` says.
   */
  fetch?: (input: string, init: RequestInit) => Promise<Response>;
  /** Accepted as `@upstash/redis` takes it; edgelimit sends no telemetry either way. */
  enableTelemetry?: boolean;
}

/**
 * An `@upstash/redis` `Redis` made with a URL and a token. edgelimit reads them where `@upstash/redis`
 * 1.x keeps them (`client.baseUrl`, `client.headers.authorization`: it offers no public accessor) and
 * sends with the global `fetch`, as `@upstash/redis` does; one made over a custom requester throws.
 */
export interface UpstashRedis {
  /** `@upstash/redis`'s HTTP client. */
  client: unknown;
}

/** Where the counters live: a Redis reached over the Upstash REST protocol with `fetch`. */
export class Redis {
  /** Checks the settings; nothing is sent until the first limit. */
  constructor(config: RedisConfig);
  /**
   * Reads `UPSTASH_REDIS_REST_URL` and `UPSTASH_REDIS_REST_TOKEN` (or, as `@upstash/redis` does, Vercel's
   * `KV_REST_API_URL` and `KV_REST_API_TOKEN` when those are unset) from `env` (a Worker's `env`, say),
   * else from `process.env`, else from `Deno.env`. A variable unset in `env` throws a `TypeError` naming
   * it. Unset in the environment, it is warned about and every request of a limit with this Redis
   * rejects with a `TypeError` naming it (whatever `failMode` says), so that a build that evaluates
   * modules without the runtime's variables (`next build`) still builds.
   */
  static fromEnv(env?: Record<string, unknown>): Redis;
  /** The REST URL (`undefined` when `fromEnv` found it unset). */
  readonly url: string;
  /** The bearer token (`undefined` when `fromEnv` found it unset). */
  readonly token: string;
  /** The custom `fetch`, if one was given. */
  readonly fetch: RedisConfig["fetch"] | undefined;
  /** What `fromEnv` found unset in the environment, if anything: then every request fails saying so. */
  readonly unset: string | undefined;
  /** Frees the WebAssembly memory behind this object (optional; the garbage collector does it too). */
  free(): void;
}

/** One limit of a set: a limiter, or a limiter with its own key prefix and dry run. */
export type LimitItem =
  | Limiter
  | {
      limiter: Limiter;
      /** The keys of this limit are `<prefix>:<identifier>…`; not on the first item (it uses `prefix`). */
      prefix?: string;
      /** Whether this limit runs dry (default: the limiter's `dryRun`). */
      dryRun?: boolean;
    };

/** Options of `new Ratelimit(...)`. */
export interface RatelimitConfig {
  /**
   * Where the counters live. Omit it for an in-memory store private to this instance (bounded to
   * 100 000 keys; nothing is shared between processes or isolates).
   */
  redis?: Redis | RedisConfig | UpstashRedis;
  /**
   * The algorithm, e.g. `Ratelimit.slidingWindow(10, "10 s")`. Required. Or several limits, 1 to 8, decided
   * all or nothing in one script call: `[Ratelimit.slidingWindow(10, "1 s"), { limiter:
   * Ratelimit.fixedWindow(1000, "1 d"), prefix: "api:day" }]`. A request is admitted only if every live
   * limit admits it, and a denied request is counted by none. The first limit's keys are under `prefix`;
   * each other one's under its own `prefix` (default `<prefix>#<index>`), so a set can share the keys of
   * `@upstash/ratelimit` instances with those prefixes. Not with `lease`, `enableProtection`,
   * `analytics` or `cachedFixedWindow`; the same limit twice, or prefixes whose keys would meet, throw.
   */
  limiter: Limiter | readonly [LimitItem, ...LimitItem[]];
  /**
   * Runs every limit dry (default `false`; an item's own `dryRun` overrides it): decided and counted in
   * Redis exactly as live, so switching to live changes nothing stored, but never denying. The answer
   * then carries `live`, what live limits would have answered, and `reason: "dryRun"` when they would
   * have denied. Not with `failMode: "closed"` when every limit runs dry.
   */
  dryRun?: boolean;
  /** Keys are `<prefix>:<identifier>`. Default `"@upstash/ratelimit"`, the same keys as `@upstash/ratelimit`. */
  prefix?: string;
  /**
   * How the identifier goes into its keys. `"upstash"` (default): `<prefix>:<identifier>…`, the keys of
   * `@upstash/ratelimit`. `"cluster"`: `<prefix>:{<identifier>}…`, every key of an identifier in one hash
   * slot, for a Redis Cluster; not shared with `@upstash/ratelimit`. The keys every identifier shares are
   * reached beside the decision's script, as `@upstash/ratelimit` reaches them: the deny list
   * (`enableProtection`) by a command in the decision's own request, so a denied request is counted by
   * the limit, as the peer counts it; the analytics event in `pending`; the dynamic limit
   * (`dynamicLimits`) read before the decision, a second round trip (`MultiRegionRatelimit`: in each
   * region, before that region's decision). Without it, a call refused by a cluster (`CROSSSLOT`)
   * rejects whatever `failMode` says.
   */
  keys?: "upstash" | "cluster";
  /**
   * Remembers identifiers that were denied until their `reset`, answering them locally
   * (`reason: "cacheBlock"`) without a request to Redis. `true` or omitted: a cache of this instance, up
   * to 10 000 identifiers; a number: up to that many; a `Map`, as with `@upstash/ratelimit`: one cache
   * shared by every `Ratelimit` given the same `Map` (up to 10 000 identifiers; the entries are kept
   * inside the WebAssembly module, the `Map` stays empty); `false`: no cache (not allowed with
   * `cachedFixedWindow`). Expired entries are pruned, so it never grows past its bound.
   */
  ephemeralCache?: Map<string, number> | boolean | number;
  /**
   * How long a `limit()` call may wait for Redis, in milliseconds (fractions kept, at most 2^31 - 1
   * taken); `0` waits forever. Default `5000`. It bounds the whole call, however many requests it makes:
   * when Redis lacks the script, the EVAL after the EVALSHA gets what is left (and runs on in the
   * background until `timeout` to load the script for the next calls). Then the fail mode answers with
   * `reason: "timeout"`. Natively (`HttpTransport`), the timeout is per request.
   */
  timeout?: number;
  /**
   * What to answer when Redis fails or times out: `"open"` (default, like `@upstash/ratelimit`) admits
   * the request, `"closed"` denies it. Either way `reason` says `"timeout"` or `"error"`.
   */
  failMode?: "open" | "closed";
  /**
   * Leases units of hot identifiers: a decision that goes to Redis anyway also reserves up to `tokens`
   * units of the identifier's limit for at most `ttl` (a duration such as `"1 s"`, at most the
   * algorithm's window), and the next `limit()` calls on it in this instance (a Worker isolate keeps
   * them between requests) are answered from them with no request. The units are counted as used in
   * Redis before they are handed out, so no instance, leasing or not, ever admits past the limit;
   * unused units go back in `pending` or with `returnLeases()`. A lease holds at most a tenth of the
   * limit: the first an eighth of that, then twice as much while leases are spent before they end and
   * half as much when units come back unused; a limit below 20 is never leased. Needs `redis`; not with
   * `cachedFixedWindow` or `enableProtection`, nor with `dynamicLimits` (a `TypeError`: a lease is spent
   * without asking Redis, so it could not obey a pause or a lower limit at once). A `tokens` of 0 or
   * above the limit, or a `ttl` longer than the window, throws a `RangeError`.
   */
  lease?: { tokens: number; ttl: Duration };
  /**
   * Enables `setDynamicLimit`/`getDynamicLimit`: a limit stored in Redis under
   * `<prefix>:dynamic:global` (the key `@upstash/ratelimit` uses) replaces the configured one — tokens,
   * `maxTokens`, or GCRA's burst — for every identifier, read atomically by each decision. A limit the
   * peer stored that is negative or fractional is applied as the peer compares it: 0 when negative, a
   * fraction rounded down (up for `slidingWindow`, which admits while the count is below the limit).
   * `cachedFixedWindow` ignores it, as `@upstash/ratelimit`'s does (with the same warning), so both
   * count alike in a mixed fleet; the limit is still stored and read. Default `false`.
   */
  dynamicLimits?: boolean;
  /**
   * Times the decisions by this instance's `Date.now()`, as `@upstash/ratelimit` does, instead of by
   * Redis's clock (`TIME` in the script; the default with `redis`), with which a request counts in the
   * window of the moment Redis decides it, however late it arrives and whatever this instance's
   * clock says within a window of Redis's (beyond, a window algorithm's call rejects with `CLOCKSKEW`).
   * With the local clock, the clocks of the instances sharing a limit must agree within 10 s, less
   * the time a call takes (README, "Clocks"). `cachedFixedWindow`, whose local counts keep windows of
   * this instance's clock, and the in-memory store always use it. Default `false`.
   */
  localClock?: boolean;
  /**
   * Records every answer as an analytics event, as `@upstash/ratelimit` does through
   * `@upstash/core-analytics` (`ZINCRBY <prefix>:events:<hour>` with `{ identifier, success, ...geo }`),
   * which the Upstash console reads. Written by the decision's own request; an answer given without a
   * request (`cacheBlock`, the fail mode, `cachedFixedWindow`) writes it in `pending`. Needs `redis`.
   * Default `false`.
   */
  analytics?: boolean;
  /**
   * Checks the identifier and the `ip`, `userAgent` and `country` given to `limit` against the deny
   * list `<prefix>:denyList:all` (the one the Upstash console manages and `@upstash/ratelimit` reads), in
   * the same request as the limit. A value found answers `success: false`, `reason: "denyList"`,
   * `deniedValue`, without counting anything, and is remembered for a minute (up to 1 000 values).
   * Needs `redis`; not with `cachedFixedWindow`. Default `false`.
   */
  enableProtection?: boolean;
  /**
   * For `updateIpDenyList`: of a list with scores (how many sources name the IP), the IPs scored at
   * least this are denied. From 1 to 8, default 6, as `@upstash/ratelimit`.
   */
  denyListThreshold?: number;
  /** Accepted as `@upstash/ratelimit` 2.x takes it, where it has no effect either (scripts run by hash). */
  cacheScripts?: boolean;
  /** Accepted as `@upstash/ratelimit` takes it; edgelimit sends no telemetry either way. */
  enableTelemetry?: boolean;
}

/** Options of `limit`. */
export interface LimitOptions {
  /**
   * How much this request costs. Default `1` (also for `null`, as `@upstash/ratelimit`'s `rate ?? 1`);
   * `0` peeks; a negative rate refunds. Must be finite and at most 2^53 - 1 in size; whole for the
   * window algorithms. A rate above the limit is denied.
   */
  rate?: number | null;
  /** With `enableProtection`: the client's IP, checked against the deny list. */
  ip?: string;
  /** With `enableProtection`: the client's user agent, checked against the deny list. */
  userAgent?: string;
  /** With `enableProtection`: the client's country, checked against the deny list. */
  country?: string;
  /** With `analytics`: fields recorded with the event (Vercel's `request.geo`). */
  geo?: { country?: string; city?: string; region?: string; ip?: string; [field: string]: unknown };
  /** With `analytics`: Cloudflare's `request.cf`, recorded with the event when `geo` is not given. */
  cf?: Record<string, unknown>;
  /** With `analytics`: a request whose `geo` or `cf` is recorded when neither is given here. */
  request?: { geo?: Record<string, unknown>; cf?: Record<string, unknown> };
}

/** The answer of `limit`. */
export interface LimitResponse {
  /** Whether the request may proceed. */
  success: boolean;
  /** The most the limit admits at once (tokens per window, bucket size or burst). */
  limit: number;
  /** What is left after this request. */
  remaining: number;
  /**
   * When the limit is next restored, in milliseconds since the Unix epoch (the current time when the
   * fail mode answered, with `remaining: 0` and `limit` the configured limit: the peer answers a
   * timeout with `limit: 0, reset: 0`, which headers built from the answer cannot use).
   */
  reset: number;
  /**
   * Work that may finish after the answer (the Redis write of `cachedFixedWindow`); always a Promise,
   * which never rejects. Hand it to `ctx.waitUntil`.
   */
  pending: Promise<unknown>;
  /**
   * Set when the answer did not come from Redis's decision: `"cacheBlock"` (the ephemeral cache),
   * `"timeout"` or `"error"` (the fail mode decided), `"denyList"` (a value is in the deny list; then
   * `limit`, `remaining` and `reset` are 0, as `@upstash/ratelimit` answers from its cache).
   */
  reason?: "timeout" | "cacheBlock" | "denyList" | "error" | "dryRun";
  /** The value found in the deny list, when `reason` is `"denyList"`. */
  deniedValue?: string;
  /**
   * With several limits, each one's own answer, in the order of `limiter`; `limit`, `remaining` and
   * `reset` above are those of the limit that binds (the first that denies, else the one with the least
   * left). Absent when the ephemeral cache answered (`reason: "cacheBlock"`).
   */
  limits?: SetLimitResponse[];
  /**
   * When a limit runs dry: what the live limits would have answered (every limit live). `reason` is
   * `"dryRun"` when the answer admits a request live limits would have denied.
   */
  live?: Pick<LimitResponse, "success" | "limit" | "remaining" | "reset" | "reason">;
}

/** One limit's answer among several (`LimitResponse.limits`). */
export interface SetLimitResponse {
  /** Whether this limit admits the request. */
  success: boolean;
  /** The limit. */
  limit: number;
  /** What is left of this limit after the request. */
  remaining: number;
  /** When this limit is next restored, in milliseconds since the Unix epoch. */
  reset: number;
  /** Whether this limit runs dry. */
  dryRun: boolean;
}

/** The answer of `getRemaining`. */
export interface RemainingResponse {
  /** What could be taken now. */
  remaining: number;
  /** When the limit is next restored, in milliseconds since the Unix epoch. */
  reset: number;
  /** The most the limit admits at once. */
  limit: number;
  /** With several limits, each one's `{ remaining, reset, limit }`; the fields above are the binding one's. */
  limits?: { remaining: number; reset: number; limit: number }[];
}

/** A rate limit applied to identifiers. */
export class Ratelimit {
  /** Checks every option; throws a `TypeError` or `RangeError` naming a bad one. */
  constructor(config: RatelimitConfig);
  /**
   * Takes `rate` (default 1) from `identifier`'s limit. The identifier is a string (empty too) or a
   * number, keyed as `String(identifier)`, as `@upstash/ratelimit` keys it. Rejects with a
   * `TypeError`/`RangeError` for another identifier, an unknown option or a bad rate; backend failures
   * are answered as `failMode` says.
   */
  limit(identifier: string | number, options?: LimitOptions | null): Promise<LimitResponse>;
  /** What `identifier` could take now, without taking anything. Rejects if Redis fails. */
  getRemaining(identifier: string): Promise<RemainingResponse>;
  /**
   * Calls `limit(identifier)` until it succeeds or `timeout` milliseconds have passed, waiting exactly as
   * long as the limit says between calls. Resolves with the last answer: a denial comes at once when
   * waiting cannot help (the wait would pass the deadline, or the fail mode answered). Any positive
   * `timeout` (fractional, past 2^31 - 1 ms, `Infinity`), as `@upstash/ratelimit` takes it; rejects with a
   * `RangeError` otherwise.
   */
  blockUntilReady(identifier: string, timeout: number): Promise<LimitResponse>;
  /**
   * Forgets everything `identifier` used (in Redis and in the local caches). With `lease`, this
   * instance's lease on it is dropped, and units other instances still hold in live leases stay counted
   * until they are returned or end, since those instances may still spend them.
   */
  resetUsedTokens(identifier: string): Promise<void>;
  /**
   * Ends every lease this instance holds (`lease`) and gives their unused units back to Redis; the
   * Promise never rejects. Hand it to `waitUntil` when an instance is done with its identifiers.
   */
  returnLeases(): Promise<void>;
  /**
   * Stores `limit` (a whole number; 0 denies every request) as the limit of every identifier under this prefix, or removes
   * it with `limit: false`. Rejects with an `Error` unless `dynamicLimits: true`.
   */
  setDynamicLimit(options: { /** The new limit, or `false` to go back to the configured one. */ limit: number | false }): Promise<void>;
  /**
   * The stored dynamic limit, `null` when none; one the peer stored negative or fractional is answered
   * rounded down, 0 when negative (the peer answers it as stored). Rejects with an `Error` unless
   * `dynamicLimits: true`.
   */
  getDynamicLimit(): Promise<{ /** The stored limit, or `null`. */ dynamicLimit: number | null }>;
  /**
   * Replaces the IP deny list with the keys of `@upstash/ratelimit` (`<prefix>:denyList:ipDenyList`,
   * joined into `<prefix>:denyList:all`; `<prefix>:ipDenyListStatus` "valid"), atomically. `list` is an
   * array of lines, or a URL whose text is fetched with the `fetch` of `redis`; each line is an IP,
   * optionally followed by its score, kept when at least `denyListThreshold`; blank and `#` lines are
   * skipped. Valid for `ttl` ms, or until the next 2 AM UTC. Resolves to how many IPs the list holds
   * (values the console denies itself stay, and are not counted). Nothing is downloaded otherwise.
   */
  updateIpDenyList(list: readonly string[] | string | URL, options?: { /** How long the list is valid, in ms. */ ttl?: number }): Promise<number>;
  /** Removes the IP deny list from the deny list and marks it `"disabled"`, as `@upstash/ratelimit`'s. */
  disableIpDenyList(): Promise<void>;
  /** Frees the WebAssembly memory behind this object (optional; the garbage collector does it too). */
  free(): void;

  /** `tokens` requests per `window`, counted in fixed windows aligned to the epoch. */
  static fixedWindow(tokens: number, window: Duration): Limiter;
  /**
   * A fixed window answered from this instance's count once it knows it, the Redis write left in
   * `pending`: no round trip per request, at the price of exactness across instances (each admits
   * against its own count until the writes land). Same keys as `fixedWindow`. Needs the ephemeral cache.
   */
  static cachedFixedWindow(tokens: number, window: Duration): Limiter;
  /** `tokens` requests per `window`, the previous window weighted by how much of it overlaps. */
  static slidingWindow(tokens: number, window: Duration): Limiter;
  /** A bucket of `maxTokens` tokens, refilled by `refillRate` every `interval`. */
  static tokenBucket(refillRate: number, interval: Duration, maxTokens: number): Limiter;
  /**
   * GCRA: `limit` requests per `period`, refilled continuously, with bursts of up to `burst`
   * (default `limit`).
   */
  static gcra(limit: number, period: Duration, options?: { /** Most requests admitted at once. */ burst?: number }): Limiter;
}

/** Options of `new MultiRegionRatelimit(...)`: those of `Ratelimit`, with one Redis per region. */
export interface MultiRegionRatelimitConfig extends Omit<RatelimitConfig, "redis" | "limiter" | "dryRun"> {
  /**
   * One Redis per region, at least one, each a separate database (never the same one twice). Every
   * region is asked at once; the first to reply answers. A `TypeError` names an entry that is not a
   * `Redis` or `{ url, token }`.
   */
  redis: readonly (Redis | RedisConfig)[];
  /**
   * `MultiRegionRatelimit.fixedWindow` or `slidingWindow` (the same from `Ratelimit`): the state of
   * `@upstash/ratelimit`'s `MultiRegionRatelimit`, so both can share the regions; or
   * `Ratelimit.tokenBucket` or `Ratelimit.gcra`, which the peer lacks: their requests are kept per
   * epoch and replayed, so regions admitting together leave a debt that later requests wait out. Not
   * `cachedFixedWindow`.
   */
  limiter: Limiter;
  /** How long to wait for each region, in whole milliseconds; `0` waits forever. Default `5000`. */
  timeout?: number;
  /** What to answer when no region replies: `"open"` (default) or `"closed"`, with `reason` set. */
  failMode?: "open" | "closed";
}

/**
 * A rate limit replicated over several Redis databases, one per region, state-compatible with
 * `@upstash/ratelimit`'s `MultiRegionRatelimit`. Each answer comes from the first region to reply;
 * its `pending` merges the regions (the union of the request ids each holds) and settles once every
 * region that replied holds it — hand it to `ctx.waitUntil`. It never rejects. Regions decide on what
 * they hold, so until merges land, a fleet may admit more than the limit in one window (see the README).
 */
export class MultiRegionRatelimit {
  /** Checks every option; throws a `TypeError` or `RangeError` naming a bad one. */
  constructor(config: MultiRegionRatelimitConfig);
  /** Takes `rate` (default 1) from `identifier`'s limit, answered by the first region to reply. */
  limit(identifier: string, options?: LimitOptions): Promise<LimitResponse>;
  /** What `identifier` could take now, as the first region to reply sees it. Rejects if none replies. */
  getRemaining(identifier: string): Promise<RemainingResponse>;
  /** Calls `limit(identifier)` until it succeeds or `timeout` milliseconds have passed (see `Ratelimit`). */
  blockUntilReady(identifier: string, timeout: number): Promise<LimitResponse>;
  /**
   * Forgets everything `identifier` used in every region; settles once all have, rejects if one failed.
   * Merges still running (earlier answers' `pending`) may write their ids back: reset once they settle.
   */
  resetUsedTokens(identifier: string): Promise<void>;
  /** Stores the dynamic limit in every region, or removes it with `limit: false`. Needs `dynamicLimits: true`. */
  setDynamicLimit(options: { /** The new limit, or `false` to go back to the configured one. */ limit: number | false }): Promise<void>;
  /** The dynamic limit the first region to reply holds, `null` when none. Needs `dynamicLimits: true`. */
  getDynamicLimit(): Promise<{ /** The stored limit, or `null`. */ dynamicLimit: number | null }>;
  /** Frees the WebAssembly memory behind this object (optional; the garbage collector does it too). */
  free(): void;

  /** `tokens` requests per `window`, counted in fixed windows aligned to the epoch. */
  static fixedWindow(tokens: number, window: Duration): Limiter;
  /** `tokens` requests per `window`, the previous window weighted by how much of it overlaps. */
  static slidingWindow(tokens: number, window: Duration): Limiter;
}

/** Options of `rateLimitHeaders`. */
export interface RateLimitHeadersOptions {
  /** The current time, in milliseconds since the Unix epoch. Default `Date.now()`. */
  now?: number;
  /**
   * Which revision of the IETF draft "RateLimit header fields for HTTP" to follow:
   * - `"separate"` (default): `RateLimit-Limit: 10`, `RateLimit-Remaining: 3`, `RateLimit-Reset: 5`
   *   (drafts 00–06, what most servers send today);
   * - `"draft-07"`: `RateLimit: limit=10, remaining=3, reset=5` and, with `window`, `RateLimit-Policy: 10;w=10`;
   * - `"draft-11"`: `RateLimit: "default";r=3;t=5` and `RateLimit-Policy: "default";q=10;w=10`
   *   (`w` only with `window`), the syntax of drafts 08–11.
   */
  style?: "separate" | "draft-07" | "draft-11";
  /**
   * The limit's window (or period, or refill interval), for `RateLimit-Policy`; for an answer of several
   * limits, one per limit (or `null`), in the order of its `limits`, each written as a policy.
   */
  window?: Duration | readonly (Duration | null)[];
  /** Whether limits that run dry get headers: `"omit"` (default) or `"emit"`. */
  dryRun?: "omit" | "emit";
}

/**
 * The HTTP header fields describing an answer of `limit()` (edgelimit's or `@upstash/ratelimit`'s), as
 * a plain object of header names to string values, ready for `new Response(body, { headers })`.
 * Remaining requests are rounded down, seconds up: `RateLimit-Reset` is the whole seconds until `reset`,
 * and a denial adds `Retry-After`, the whole seconds that pass `reset` (at least 1), after which the
 * same client is admitted, unless others took the capacity meanwhile (by a sliding window, for one
 * request: a larger `rate` may have to wait longer).
 * Throws a `TypeError` (wrong type) or `RangeError` (out of range) naming a bad field.
 */
export function rateLimitHeaders(
  response: Pick<LimitResponse, "success" | "limit" | "remaining" | "reset"> & Partial<Pick<LimitResponse, "limits" | "live">>,
  options?: RateLimitHeadersOptions,
): Record<string, string>;
