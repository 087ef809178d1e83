// The playground (www/, `make www`) in Chromium, driven by playwright-core with the chromium on PATH: it
// loads the package, fires requests at the chosen limiters and counts the decisions per limiter, and
// shows the library's own error for bad parameters. No gateway needed (the page limits in memory).
//
//   node --test tests/js/www.test.mjs
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { chromium } from "playwright-core";
import { serve } from "../../www/serve.mjs";

const executablePath = (() => {
  try {
    return execFileSync("sh", ["-c", "command -v chromium"], { encoding: "utf8" }).trim();
  } catch {
    return "";
  }
})();
const skip = !existsSync(executablePath) && "no chromium on PATH (scripts/bootstrap.sh installs it)";

let server;
let browser;
let page;
const pageErrors = [];

before(async () => {
  if (skip) return;
  server = await serve(0);
  browser = await chromium.launch({ executablePath, args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"] });
  page = await browser.newPage();
  page.on("pageerror", (error) => pageErrors.push(String(error)));
  page.on("console", (message) => message.type() === "error" && pageErrors.push(message.text()));
  await page.goto(`http://127.0.0.1:${server.address().port}/`);
  await page.waitForSelector("body[data-ready=true]", { timeout: 30_000 });
});

after(async () => {
  await browser?.close();
  if (server) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** Fills the form and fires `count` requests. */
async function fire({ algorithm, first, second, third, identity = "user:1", count }) {
  await page.selectOption("#algorithm", algorithm);
  await page.fill("#first", String(first));
  await page.fill("#second", String(second));
  if (third !== undefined) await page.fill("#third", String(third));
  await page.fill("#identity", identity);
  await page.fill("#count", String(count));
  await page.click("#fire");
}

/** The counts of the row of `limiter`, once it shows `allowed + denied` decisions. */
async function row(limiter, total) {
  const selector = `#counts tr[data-limiter='${limiter}']`;
  await page.waitForFunction(
    ([selector, total]) => {
      const cells = document.querySelector(selector)?.children;
      return cells && Number(cells[1].textContent) + Number(cells[2].textContent) === total;
    },
    [selector, total],
    { timeout: 10_000 },
  );
  const cells = await page.$$eval(`${selector} td`, (tds) => tds.map((td) => td.textContent));
  return { allowed: Number(cells[1]), denied: Number(cells[2]), remaining: Number(cells[3]) };
}

test("the page loads the package's browser entry and counts each limiter's decisions", { skip }, async () => {
  await fire({ algorithm: "fixedWindow", first: 3, second: "1 m", count: 5 });
  assert.deepEqual(await row('fixedWindow(3, "1 m")', 5), { allowed: 3, denied: 2, remaining: 0 });

  await fire({ algorithm: "gcra", first: 2, second: "1 h", third: 2, count: 3 });
  assert.deepEqual(await row('gcra(2, "1 h", {burst:2})', 3), { allowed: 2, denied: 1, remaining: 0 });

  await fire({ algorithm: "tokenBucket", first: 1, second: "1 h", third: 4, count: 2, identity: "user:2" });
  assert.deepEqual(await row('tokenBucket(1, "1 h", 4)', 2), { allowed: 2, denied: 0, remaining: 2 });

  // The first limiter keeps its counts; another identifier has its own limit.
  await fire({ algorithm: "fixedWindow", first: 3, second: "1 m", count: 1, identity: "user:2" });
  assert.deepEqual(await row('fixedWindow(3, "1 m")', 6), { allowed: 4, denied: 2, remaining: 2 });
  assert.equal(await page.textContent("#error"), "");
  assert.equal(await page.locator("#log li").count(), 11);
  assert.deepEqual(pageErrors, []);
});

test("bad parameters show the library's error, naming the parameter", { skip }, async () => {
  const cases = [
    [{ algorithm: "slidingWindow", first: 0, second: "10 s" }, /^RangeError: Ratelimit\.slidingWindow: `tokens` .*got 0$/],
    [{ algorithm: "fixedWindow", first: "ten", second: "10 s" }, /^TypeError: Ratelimit\.fixedWindow: `tokens` must be a number, got "ten"$/],
    [{ algorithm: "tokenBucket", first: 1, second: "soon", third: 5 }, /^RangeError: Ratelimit\.tokenBucket: `interval` /],
    [{ algorithm: "gcra", first: 5, second: "10 s", third: 1.5 }, /^RangeError: Ratelimit\.gcra: `burst` /],
  ];
  for (const [form, message] of cases) {
    await fire({ ...form, count: 1 });
    await page.waitForFunction(() => document.getElementById("error").textContent !== "");
    assert.match(await page.textContent("#error"), message);
    await page.click("#clear");
  }
  // A good request clears the error.
  await fire({ algorithm: "slidingWindow", first: 2, second: "10 s", count: 1 });
  assert.deepEqual(await row('slidingWindow(2, "10 s")', 1), { allowed: 1, denied: 0, remaining: 1 });
  assert.equal(await page.textContent("#error"), "");
  assert.deepEqual(pageErrors, []);
});
