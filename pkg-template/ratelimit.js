// `Ratelimit` as the package exports it: the class compiled from Rust (src/wasm/ratelimit.rs), with
// `limit()` answered in one crossing when the decision needs no I/O (src/wasm/at_once.rs): the time
// read here, the numbers read from the limit's slots in WebAssembly memory, the answer object and its
// settled Promise made here. Every other call goes to the compiled method.
import { Ratelimit as CompiledRatelimit, atOnceSlots, limitAtOnce } from "./edgelimit.js";

/** The `pending` of an answer that leaves no work behind. */
const SETTLED = Promise.resolve();

/** The reasons of an answer, by the number src/wasm/at_once.rs codes them with. */
const REASONS = [undefined, "timeout", "cacheBlock", "error", "denyList"];

export class Ratelimit extends CompiledRatelimit {
  /** The limit's slots (`limit`, `remaining`, `reset`), or undefined when its decisions need I/O. */
  #slots;

  constructor(config) {
    super(config);
    this.#slots = atOnceSlots(this);
  }

  limit(identifier, options) {
    if (this.#slots !== undefined && options === undefined) {
      const text = typeof identifier === "string" ? identifier : typeof identifier === "number" ? String(identifier) : undefined;
      if (text !== undefined) {
        const code = limitAtOnce(this, text, Date.now(), 1);
        if (code !== 0) return Promise.resolve(this.#answer(code));
      }
    }
    return super.limit(identifier, options);
  }

  /** `{ success, limit, remaining, reset, pending, reason? }` from `code` and the slots. */
  #answer(code) {
    let slots = this.#slots;
    // A view over memory that has grown since is empty: take a new one.
    if (slots.length === 0) slots = this.#slots = atOnceSlots(this);
    const response = { success: (code & 2) !== 0, limit: slots[0], remaining: slots[1], reset: slots[2], pending: SETTLED };
    if (code > 3) response.reason = REASONS[code >> 2];
    return response;
  }
}
