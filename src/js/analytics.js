// The analytics events of a decision, written by JSON.stringify exactly as @upstash/ratelimit (through
// @upstash/core-analytics) writes them, whatever geo object a runtime hands over; in one call each.
// Imported by src/js/analytics.rs.

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
