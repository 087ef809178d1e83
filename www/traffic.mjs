// Simulated clients: `clients` identities (`client-1`, `client-2`, …) each sending `rate` requests per
// second, their sends spread evenly over each period so the clients do not fire all at once.

/** How often the schedule is checked, in milliseconds. */
const TICK_MS = 20;

/** The identifier of simulated client `i` (from 1). */
export const clientName = (i) => `client-${i}`;

/** Sends requests on a schedule through `send(identifier)` until stopped. */
export class Traffic {
  #send;
  #timer = null;
  #started = 0;
  #period = 0;
  #sent = [];

  /** `send(identifier)` is called once per simulated request; what it returns is ignored. */
  constructor(send) {
    this.#send = send;
  }

  /** Whether requests are being sent. */
  get running() {
    return this.#timer !== null;
  }

  /** (Re)starts sending: `clients` identities, `rate` requests per second each. */
  start({ clients, rate }) {
    this.stop();
    this.#started = performance.now();
    this.#period = 1000 / rate;
    this.#sent = new Array(clients).fill(0);
    this.#timer = setInterval(() => this.#tick(), TICK_MS);
    this.#tick();
  }

  /** Stops sending; requests already sent still complete. */
  stop() {
    clearInterval(this.#timer);
    this.#timer = null;
  }

  /**
   * Sends what is due: client `i` of `n` sends its k-th request (from 0) at `(k + i / n) * period`. A
   * page that was throttled in the background catches up by at most one second of requests.
   */
  #tick() {
    const elapsed = performance.now() - this.#started;
    const n = this.#sent.length;
    for (let i = 0; i < n; i++) {
      const due = Math.floor(elapsed / this.#period - i / n) + 1;
      const behind = due - this.#sent[i];
      const catchUp = Math.max(1, Math.ceil(1000 / this.#period));
      if (behind > catchUp) this.#sent[i] = due - catchUp;
      while (this.#sent[i] < due) {
        this.#sent[i] += 1;
        this.#send(clientName(i + 1));
      }
    }
  }
}
