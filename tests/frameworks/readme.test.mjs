// The package README's "Frameworks" snippets are the files the framework tests build and run: each code
// block of that section, in order, is one of these files verbatim (the Node one excepted, which
// tests/js runs in its own right), so a snippet cannot drift from code that is tested.
//
//   node --test tests/frameworks/readme.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { root } from "./harness.mjs";

/** The apps' files, in the order the README shows them. */
const SNIPPETS = [
  "next/app/edge/route.ts",
  "next/middleware.ts",
  "workers/src/redis.js",
  "hono/src/app.js",
  "sveltekit/src/routes/limited/+server.js",
  "vite/limit.js",
  "bun/redis.js",
  "deno/redis.js",
];

test("the README's Frameworks section shows the tested apps' files verbatim", () => {
  const readme = readFileSync(join(root, "pkg-template/README.md"), "utf8");
  const section = readme.slice(readme.indexOf("\n## Frameworks\n"), readme.indexOf("\n## ", readme.indexOf("\n## Frameworks\n") + 1));
  const blocks = [...section.matchAll(/```(?:ts|js)\n([\s\S]*?)```/g)].map(([, code]) => code);
  assert.ok(blocks.length > SNIPPETS.length, "the section has a block per app, then Node's");
  SNIPPETS.forEach((file, index) => {
    assert.equal(blocks[index], readFileSync(join(root, "tests/frameworks", file), "utf8"), `block ${index + 1} is tests/frameworks/${file}`);
  });
});

test("Next.js's Node route and proxy.ts are the edge route and middleware.ts with the stated change", () => {
  const read = (file) => readFileSync(join(root, "tests/frameworks/next", file), "utf8");
  assert.equal(read("app/node/route.ts"), read("app/edge/route.ts").replace('runtime = "edge"', 'runtime = "nodejs"'));
  assert.equal(read("proxy.ts"), read("middleware.ts").replace("function middleware(", "function proxy("));
});
