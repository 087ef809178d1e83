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

const isLetter = (code) => (code | 0x20) >= 0x61 && (code | 0x20) <= 0x7a;

/**
 * The shapes of a request body's commands and whether it is a pipeline, found by a scan when every
 * command is an EVALSHA (the shape is its SHA), else by `JSON.parse`. `JSON.parse` of a pipeline of 64
 * commands costs about 0.8 µs per command, as much as a library's own work, for both libraries alike;
 * the scan about 0.1 µs. Inside a JSON string every `"` is escaped, so `["` followed by a letter only
 * ever opens a command (the pipeline's own `[` is followed by `[`).
 */
function shapesOf(body) {
  const pipeline = body.startsWith("[[");
  const shapes = [];
  for (let at = body.indexOf('["'); at !== -1; at = body.indexOf('["', at + 2)) {
    if (!isLetter(body.charCodeAt(at + 2))) continue;
    const sha = at + 12;
    if (body.slice(at + 2, sha).toLowerCase() !== 'evalsha","' || body[sha + 40] !== '"') {
      return { pipeline, shapes: commandsOf(body).commands.map(shape) };
    }
    shapes.push(`evalsha ${body.slice(sha, sha + 40)}`);
  }
  return { pipeline, shapes };
}

const encoder = new TextEncoder();

/**
 * The answer of `body` (its text, and its UTF-8 bytes in an ArrayBuffer, both made once per distinct
 * answer): `text()` and `arrayBuffer()` both hand back what was made. A real Response costs about the
 * same either way (undici: 21.9 µs for `text()`, 21.3 µs for `arrayBuffer()` of a 35-byte body), so
 * neither read is charged to the library that uses it; a fresh ArrayBuffer per answer would charge
 * the one that reads bytes about 0.5 µs that a string handed back as it is does not cost the other.
 * The buffer is shared by the answers: a library that wrote into it would fail the replay's checks.
 */
function responseLike({ body, buffer }) {
  return {
    status: 200,
    ok: true,
    headers: new Headers(),
    text: async () => body,
    json: async () => JSON.parse(body),
    arrayBuffer: async () => buffer,
  };
}

/** A table of recorded replies, with a recording fetch and a replaying one. */
export class ReplyTable {
  #items = new Map(); // shape -> JSON text of the reply item
  #answers = new Map(); // the shapes of a request's commands -> { body, buffer } of its answer
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
        this.#answers.clear();
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
      const { pipeline, shapes } = shapesOf(body);
      const key = `${pipeline}\n${shapes.join("\n")}`;
      let answer = this.#answers.get(key);
      if (answer === undefined) {
        const items = shapes.map((shape) => {
          const item = this.#items.get(shape);
          if (item === undefined) throw new Error(`fake fetch: no recorded reply for ${shape.slice(0, 60)}`);
          return item;
        });
        const text = pipeline ? `[${items.join(",")}]` : items[0];
        this.#answers.set(key, (answer = { body: text, buffer: encoder.encode(text).slice().buffer }));
      }
      return responseLike(answer);
    };
  }

  /** Zeroes the request and byte counts. */
  resetCounts() {
    this.requests = 0;
    this.bytes = 0;
  }
}
