// `Ratelimit` as the package exports it: the class compiled from Rust (src/wasm/ratelimit.rs), whose
// `limit()` without options writes the identifier's UTF-8 into WebAssembly memory for Rust to read in
// place (src/wasm/at_once.rs), and, when the decision needs no I/O, answers in one crossing: the time
// read here, the numbers read from the limit's slots in that memory, the answer object and its settled
// Promise made here. Every other call goes to the compiled method.
import { Ratelimit as CompiledRatelimit, atOnceIdentifier, atOnceReasons, atOnceSlots, limitAtOnce, limitWritten } from "./edgelimit_bg.js";

/** The `pending` of an answer that leaves no work behind. */
const SETTLED = Promise.resolve();

/** The reasons of an answer, by the number src/wasm/at_once.rs codes them with (asked once). */
let reasons;

const ENCODER = new TextEncoder();

export class Ratelimit extends CompiledRatelimit {
  /** The limit's slots (`limit`, `remaining`, `reset`), or undefined when its decisions need I/O. */
  #slots;
  /** The bytes the identifier is written into, or undefined when `limit()` reads it from JavaScript. */
  #identifier;

  constructor(config) {
    super(config);
    this.#view();
  }

  limit(identifier, options) {
    if (this.#identifier !== undefined && options === undefined) {
      const text = typeof identifier === "string" ? identifier : typeof identifier === "number" ? String(identifier) : undefined;
      const length = text === undefined ? -1 : this.#write(text);
      if (length >= 0) {
        if (this.#slots === undefined) {
          const answer = limitWritten(this, length);
          if (answer !== undefined) return answer;
        } else {
          const code = limitAtOnce(this, length, Date.now(), 1);
          if (code !== 0) return Promise.resolve(this.#answer(code));
        }
      }
    }
    return super.limit(identifier, options);
  }

  /** Takes views of the slots and the identifier's bytes: a view over memory that has grown since is empty. */
  #view() {
    this.#slots = atOnceSlots(this);
    this.#identifier = atOnceIdentifier(this);
  }

  /** Writes `text`'s UTF-8 into the identifier's bytes: its length in bytes, or -1 when it does not fit. */
  #write(text) {
    if (this.#identifier.length === 0) this.#view();
    const bytes = this.#identifier;
    const length = text.length;
    if (length > bytes.length) return -1;
    for (let index = 0; index < length; index++) {
      const unit = text.charCodeAt(index);
      if (unit > 0x7f) {
        const { read, written } = ENCODER.encodeInto(text, bytes);
        return read === length ? written : -1;
      }
      bytes[index] = unit;
    }
    return length;
  }

  /** `{ success, limit, remaining, reset, pending, reason? }` from `code` and the slots. */
  #answer(code) {
    if (this.#slots.length === 0) this.#view();
    const slots = this.#slots;
    const response = { success: (code & 2) !== 0, limit: slots[0], remaining: slots[1], reset: slots[2], pending: SETTLED };
    if (code > 3) response.reason = (reasons ??= atOnceReasons())[code >> 2];
    return response;
  }
}
