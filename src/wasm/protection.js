// The JavaScript half of protection and analytics (src/wasm/protection.rs): what JavaScript does
// exactly as @upstash/ratelimit does it, in one call each. Imported by src/wasm/protection.rs.

/**
 * The geo fields of `limit`'s options as @upstash/ratelimit's `extractGeo` takes them (`geo`, else
 * Cloudflare's `cf`), else those of `options.request` (a `Request` carrying `geo` or `cf`).
 */
function extractGeo(options) {
  if (!options) return undefined;
  if (options.geo !== undefined) return options.geo;
  if (options.cf !== undefined) return options.cf;
  const request = options.request;
  if (request && (request.geo !== undefined || request.cf !== undefined)) {
    return request.geo !== undefined ? request.geo : request.cf;
  }
  return {};
}

/** An event as @upstash/core-analytics writes it: `JSON.stringify({ identifier, time: undefined, success, ...geo })`. */
function event(identifier, success, options) {
  return JSON.stringify({ identifier, time: undefined, success, ...extractGeo(options) });
}

/**
 * The analytics events a decision of the limit records: admitted, then rate limited. Throws what
 * `JSON.stringify` throws (a BigInt, a cycle).
 */
export function analyticsEvents(identifier, options) {
  return [event(identifier, true, options), event(identifier, false, options)];
}

/** The analytics event of `value` found in the deny list, as the peer records it. */
export function deniedEvent(value, options) {
  return event(value, "denied", options);
}

// The IP deny list of @upstash/ratelimit, taken from the caller instead of downloaded. A rare
// administrative call, written here with the peer's keys and the peer's MULTI/EXEC transaction, so the
// WebAssembly module carries none of it.

const DAY_MS = 24 * 3_600_000;

/** Until the next 2 AM UTC, when the peer's source list is refreshed (the peer's `getIpListTTL`). */
function untilTwoAm(now) {
  return DAY_MS - ((now - 2 * 3_600_000) % DAY_MS);
}

/** The keys of the deny list: every denied value, the IP deny list, its status. */
function ipKeys(prefix) {
  return [`${prefix}:denyList:all`, `${prefix}:denyList:ipDenyList`, `${prefix}:ipDenyListStatus`];
}

/** `commands` as one MULTI/EXEC of the Upstash REST protocol; each command's result, or throws. */
async function transaction(server, context, commands) {
  const call = server.fetch ?? globalThis.fetch;
  const response = await call.call(globalThis, `${server.url}/multi-exec`, {
    method: "POST",
    headers: { Authorization: `Bearer ${server.token}`, "Content-Type": "application/json" },
    body: JSON.stringify(commands),
  });
  const text = await response.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(`${context}: the server answered HTTP ${response.status}: ${text.slice(0, 200)}`);
  }
  if (!(response.status >= 200 && response.status < 300) || !Array.isArray(body)) {
    throw new Error(`${context}: the server answered HTTP ${response.status}: ${body?.error ?? text.slice(0, 200)}`);
  }
  const failed = body.find((item) => item?.error !== undefined);
  if (failed) throw new Error(`${context}: redis error: ${failed.error}`);
  return body.map((item) => item?.result);
}

/**
 * The IPs of `text`: an IP per line, optionally followed by blanks and its score (how many lists name
 * it, as in the `ipsum` lists the peer downloads), kept when the score is at least `threshold`; blank
 * lines and `#` comments skipped. Throws a `RangeError` naming a line that is neither.
 */
function ipsOf(text, threshold) {
  const ips = [];
  text.split(/\r?\n/).forEach((line, index) => {
    const fields = line.trim().split(/\s+/);
    if (fields[0] === "" || fields[0].startsWith("#")) return;
    const score = fields.length === 1 ? Infinity : fields.length === 2 ? Number(fields[1]) : NaN;
    if (fields.length > 1 && !Number.isFinite(score)) {
      throw new RangeError(
        `Ratelimit.updateIpDenyList: \`list\` line ${index + 1} must be an IP, optionally followed by its score, got ${JSON.stringify(line)}`,
      );
    }
    if (score >= threshold) ips.push(fields[0]);
  });
  return ips;
}

/**
 * The lines of an IP deny list as one text: `list`'s strings joined, or the text at `list` (a URL, as a
 * string or a `URL`) fetched with `fetch` (the global one when undefined). Rejects with a `TypeError`
 * for anything else, or an `Error` when the fetch fails or answers other than 2xx.
 */
async function listText(fetch, list) {
  if (Array.isArray(list)) {
    const bad = list.findIndex((line) => typeof line !== "string");
    if (bad >= 0) {
      throw new TypeError(`Ratelimit.updateIpDenyList: \`list[${bad}]\` must be a string, got ${typeof list[bad]}`);
    }
    return list.join("\n");
  }
  if (typeof list === "string" || (typeof list === "object" && list !== null && typeof list.href === "string")) {
    const call = fetch ?? globalThis.fetch;
    const response = await call.call(globalThis, String(list));
    if (!(response.status >= 200 && response.status < 300)) {
      throw new Error(`Ratelimit.updateIpDenyList: ${list} answered HTTP ${response.status}`);
    }
    return response.text();
  }
  const got = list === null ? "null" : typeof list === "object" ? "an object" : String(list);
  throw new TypeError(`Ratelimit.updateIpDenyList: \`list\` must be an array of lines or a URL, got ${got}`);
}

/**
 * Replaces the IP deny list under `prefix` with the IPs of `list`, as the peer's `updateIpDenyList`
 * does (its keys, its transaction): the old IPs leave the set of every denied value, the new ones
 * (less those the console denies itself) join it, and the status is "valid" for `ttl` ms (undefined:
 * until the next 2 AM UTC). Resolves to how many IPs the list holds. `server` is the limiter's
 * `redis` option, checked: a `Redis` or `{ url, token, fetch? }`.
 */
export async function updateIpDenyList(server, prefix, threshold, list, ttl) {
  const ips = ipsOf(await listText(server.fetch, list), threshold);
  const [all, ipList, status] = ipKeys(prefix);
  const commands = [["SDIFFSTORE", all, all, ipList], ["DEL", ipList]];
  if (ips.length > 0) commands.push(["SADD", ipList, ...ips]);
  commands.push(
    ["SDIFFSTORE", ipList, ipList, all],
    ["SUNIONSTORE", all, all, ipList],
    ["SET", status, "valid", "PX", ttl ?? untilTwoAm(Date.now())],
  );
  const results = await transaction(server, "Ratelimit.updateIpDenyList", commands);
  return results[commands.length - 3];
}

/** Removes the IP deny list under `prefix` and marks it "disabled", as the peer's `disableIpDenyList`. */
export async function disableIpDenyList(server, prefix) {
  const [all, ipList, status] = ipKeys(prefix);
  await transaction(server, "Ratelimit.disableIpDenyList", [
    ["SDIFFSTORE", all, all, ipList],
    ["DEL", ipList],
    ["SET", status, "disabled"],
  ]);
}
