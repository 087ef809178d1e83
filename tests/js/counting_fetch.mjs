// A `fetch` for the JS tests that counts the requests it forwards to the global one, with their URLs
// and bodies.

/** `{ requests, urls, bodies, fetch }`: `fetch` forwards to the global `fetch` and records each call. */
export function countingFetch() {
  const counter = { requests: 0, urls: [], bodies: [] };
  counter.fetch = (target, init) => {
    counter.requests++;
    counter.urls.push(String(target));
    counter.bodies.push(String(init?.body));
    return fetch(target, init);
  };
  return counter;
}
