// Requests counted at `fetch`: the global fetch wrapped for a run, counting what every library sends over
// the real network (the end-to-end sections' requests per decision).

/**
 * Runs `body(counted)` with `globalThis.fetch` replaced by one that adds 1 to `counted.requests` and
 * passes the request on to the real fetch; the real fetch is back when `body` settles, even if it
 * throws. Resolves to what `body` resolves to.
 */
export async function withFetchCount(body) {
  const realFetch = globalThis.fetch;
  const counted = { requests: 0 };
  globalThis.fetch = (target, init) => {
    counted.requests += 1;
    return realFetch(target, init);
  };
  try {
    return await body(counted);
  } finally {
    globalThis.fetch = realFetch;
  }
}
