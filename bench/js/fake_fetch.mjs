// The network removed: a `fetch` that answers from memory with replies recorded from the real gateway
// and redis-server, so that the CPU measured per `limit()` is the library's own.
//
// 1. `record(realFetch)` wraps the real fetch: each command sent (alone or in a /pipeline) is passed
//    through, and the reply item Redis gave is kept under the command's shape (its name and script SHA;
//    other commands: name and argument count). Error items (NOSCRIPT) are not kept, so a shape holds its
//    last successful reply.
// 2. `replay()` answers every request from that table: N reply items for a pipeline of N commands, one
//    for a single command. It counts requests and request body bytes (ASCII: characters are bytes).
//    A shape never recorded throws.
//
// The answer is a Response-like object, not a `new Response()`: undici's Response plus `text()` alone
// costs about 20 µs in Node 20, which would drown the cost of both libraries.

/** The key of a command's reply: EVALSHA by SHA, EVAL by script, anything else by name and arity. */
function shape(command) {
  const name = String(command[0]).toLowerCase();
  return name === "evalsha" || name === "eval" ? `${name} ${command[1]}` : `${name}/${command.length}`;
}

/** The commands of a request body: a pipeline's array of commands, or one command. */
function commandsOf(body) {
  const parsed = JSON.parse(body);
  return Array.isArray(parsed[0]) ? { pipeline: true, commands: parsed } : { pipeline: false, commands: [parsed] };
}

/** The UTF-8 bytes of each reply body answered, so that `arrayBuffer()` costs a copy, as `text()` costs nothing. */
const encoded = new Map();
const encoder = new TextEncoder();

function responseLike(body) {
  return {
    status: 200,
    ok: true,
    headers: new Headers(),
    text: async () => body,
    json: async () => JSON.parse(body),
    arrayBuffer: async () => {
      let bytes = encoded.get(body);
      if (bytes === undefined) encoded.set(body, (bytes = encoder.encode(body)));
      return bytes.slice().buffer;
    },
  };
}

/** A table of recorded replies, with a recording fetch and a replaying one. */
export class ReplyTable {
  #items = new Map(); // shape -> JSON text of the reply item
  requests = 0;
  bytes = 0;
  /** The body of the last request recorded, to measure the fake's own cost with. */
  lastRecorded = "";

  /** A fetch that sends each request through `realFetch` and keeps the reply items. */
  record(realFetch) {
    return async (url, init) => {
      const response = await realFetch(url, init);
      const text = await response.text();
      this.lastRecorded = String(init.body);
      const { pipeline, commands } = commandsOf(this.lastRecorded);
      const items = pipeline ? JSON.parse(text) : [JSON.parse(text)];
      commands.forEach((command, i) => {
        if (items[i] && !("error" in items[i])) this.#items.set(shape(command), JSON.stringify(items[i]));
      });
      return new Response(text, { status: response.status, headers: response.headers });
    };
  }

  /** A fetch that answers from the table and counts requests and body bytes. */
  replay() {
    return async (url, init) => {
      const body = String(init.body);
      this.requests += 1;
      this.bytes += body.length;
      const { pipeline, commands } = commandsOf(body);
      const items = commands.map((command) => {
        const item = this.#items.get(shape(command));
        if (item === undefined) throw new Error(`fake fetch: no recorded reply for ${shape(command).slice(0, 60)}`);
        return item;
      });
      return responseLike(pipeline ? `[${items.join(",")}]` : items[0]);
    };
  }

  /** Zeroes the request and byte counts. */
  resetCounts() {
    this.requests = 0;
    this.bytes = 0;
  }
}
