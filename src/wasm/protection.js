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

/**
 * The analytics events one decision may record, written as @upstash/core-analytics writes them
 * (`JSON.stringify({ identifier, time: undefined, success, ...geo })`): admitted, rate limited, then
 * denied for each of `values`. Throws what `JSON.stringify` throws (a BigInt, a cycle).
 */
export function analyticsEvents(identifier, options, values) {
  const geo = extractGeo(options);
  const event = (id, success) => JSON.stringify({ identifier: id, time: undefined, success, ...geo });
  const events = [event(identifier, true), event(identifier, false)];
  for (const value of values) events.push(event(value, "denied"));
  return events;
}

/**
 * The lines of an IP deny list as one text: `list`'s strings joined, or the text at `list` (a URL, as a
 * string or a `URL`) fetched with `fetch` (the global one when undefined). Rejects with a `TypeError`
 * for anything else, or an `Error` when the fetch fails or answers other than 2xx.
 */
export async function ipDenyListText(fetch, list) {
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
  const got = list === null ? "null" : Array.isArray(list) ? "an array" : typeof list === "object" ? "an object" : String(list);
  throw new TypeError(`Ratelimit.updateIpDenyList: \`list\` must be an array of lines or a URL, got ${got}`);
}
