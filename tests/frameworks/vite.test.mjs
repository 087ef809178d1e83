// Vite: the page of tests/frameworks/vite/ built by `vite build` and served by `vite preview`, and
// served by `vite dev`, each run in Chromium (the `browser` condition: the .wasm fetched as an asset
// Vite carries), with edgelimit installed from its tarball: in memory, on Redis through the gateway
// (which answers browsers' CORS), and @upstash/ratelimit as the control.
//
//   bash scripts/with_gateway.sh node --test tests/frameworks/vite.test.mjs
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { assertAnswers, assertRedisKeys, identifier } from "./checks.mjs";
import { exec, freePort, prepareApp, startServer } from "./harness.mjs";

const executablePath = (() => {
  try {
    return execFileSync("sh", ["-c", "command -v chromium"], { encoding: "utf8" }).trim();
  } catch {
    return "";
  }
})();
const skip =
  (!process.env.EDGELIMIT_TEST_URL && "EDGELIMIT_TEST_URL is not set (run under scripts/with_gateway.sh)") ||
  (!existsSync(executablePath) && "no chromium on PATH (scripts/bootstrap.sh installs it)");

const VARIANTS = [
  { variant: "memory", stored: false },
  { variant: "redis", stored: true },
  { variant: "peer", stored: true, peer: true },
];

let browser;
before(async () => {
  if (!skip) browser = await chromium.launch({ executablePath, args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"] });
});
after(async () => {
  await browser?.close();
});

/** Opens the page at `origin` in Chromium and makes each variant's 8 decisions there. */
async function decideInPage(t, origin, mode) {
  const page = await browser.newPage();
  t.after(() => page.close());
  const errors = [];
  page.on("pageerror", (error) => errors.push(error));
  const query = new URLSearchParams({ url: process.env.EDGELIMIT_TEST_URL, token: process.env.EDGELIMIT_TEST_TOKEN });
  await page.goto(`${origin}/?${query}`);
  await page.waitForFunction(() => document.getElementById("results")?.textContent === "ready", null, { timeout: 30_000 }).catch((error) => {
    throw new Error(`the page did not start: ${errors.join("; ") || error.message}`);
  });
  for (const { variant, stored, peer } of VARIANTS) {
    const id = identifier(`vite-${mode}-${variant}`);
    const answers = [];
    for (let i = 0; i < 8; i++) answers.push(await page.evaluate(([variant, id]) => window.decide(variant, id), [variant, id]));
    assertAnswers(`${mode}: ${variant}`, answers, { peer });
    await assertRedisKeys(id, { stored });
  }
  assert.deepEqual(errors, []);
}

test("vite build and vite preview serve the package to Chromium", { skip, timeout: 600_000 }, async (t) => {
  const dir = await prepareApp("vite", { source: "vite" });
  await exec("npx", ["vite", "build"], { cwd: dir });
  const assets = readdirSync(join(dir, "dist/assets"));
  assert.equal(assets.filter((file) => file.endsWith(".wasm")).length, 1, `one .wasm among the assets: ${assets}`);
  const port = await freePort();
  const server = await startServer("npx", ["vite", "preview", "--port", String(port), "--strictPort", "--host", "127.0.0.1"], {
    cwd: dir,
    url: `http://127.0.0.1:${port}/`,
  });
  t.after(server.stop);
  await decideInPage(t, `http://127.0.0.1:${port}`, "preview");
});

test("vite dev serves the package to Chromium", { skip, timeout: 600_000 }, async (t) => {
  const dir = await prepareApp("vite", { source: "vite" });
  const port = await freePort();
  const server = await startServer("npx", ["vite", "--port", String(port), "--strictPort", "--host", "127.0.0.1"], {
    cwd: dir,
    url: `http://127.0.0.1:${port}/`,
  });
  t.after(server.stop);
  await decideInPage(t, `http://127.0.0.1:${port}`, "dev");
});
