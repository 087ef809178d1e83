// edgelimit's package over HTTPS: a gateway of its own (EDGELIMIT_GATEWAY_BIN) serving a certificate made
// here (`cargo run --example test_cert`, rcgen: no openssl CLI needed), in front of a redis-server with the
// README's ACL user; the package, in a child node trusting the test's CA through NODE_EXTRA_CA_CERTS,
// decides exactly as over HTTP; trusting another CA, every call is refused by the client (the fail mode
// answers: an unreachable database, never a decision).
//
//   bash scripts/with_gateway.sh node --test tests/js/https.test.mjs
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { createConnection } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { gatewayAclFileLine } from "../../scripts/gateway_acl.mjs";
import { freePort, processGroup, until } from "../../scripts/regions.mjs";

const root = fileURLToPath(new URL("../../", import.meta.url));
const noGateway = !process.env.EDGELIMIT_GATEWAY_BIN && "EDGELIMIT_GATEWAY_BIN is not set (run under scripts/with_gateway.sh)";
const token = `https-${randomBytes(6).toString("hex")}`;

let group;
let url;
before(async () => {
  if (noGateway) return;
  group = processGroup("edgelimit-https-");
  const made = spawnSync("cargo", ["run", "-q", "-p", "edgelimit-gateway", "--example", "test_cert", "--", group.dir], {
    cwd: root,
    encoding: "utf8",
  });
  assert.equal(made.status, 0, `test_cert failed: ${made.stderr}`);
  const password = randomBytes(12).toString("hex");
  const aclFile = join(group.dir, "users.acl");
  writeFileSync(aclFile, gatewayAclFileLine(password));
  const redisPort = await freePort();
  group.start("redis-server", ["--port", String(redisPort), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--aclfile", aclFile]);
  const gatewayPort = await freePort();
  group.start(process.env.EDGELIMIT_GATEWAY_BIN, [
    "--listen", `127.0.0.1:${gatewayPort}`, "--redis", `redis://gateway:${password}@127.0.0.1:${redisPort}`, "--token", token,
    "--tls-cert", join(group.dir, "cert.pem"), "--tls-key", join(group.dir, "key.pem"),
  ]);
  // It listens once its certificate is loaded.
  await until("the HTTPS gateway", () => new Promise((resolve) => {
    const socket = createConnection(gatewayPort, "127.0.0.1");
    socket.once("connect", () => (socket.destroy(), resolve(true)));
    socket.once("error", () => resolve(false));
  }));
  url = `https://127.0.0.1:${gatewayPort}`;
});
after(async () => {
  await group?.close();
});

/** Runs https_client.mjs trusting the CA in `caFile`: its decisions. */
function decide(caFile) {
  const child = spawnSync(process.execPath, [fileURLToPath(new URL("./https_client.mjs", import.meta.url))], {
    env: { ...process.env, NODE_EXTRA_CA_CERTS: join(group.dir, caFile), GATEWAY_URL: url, GATEWAY_TOKEN: token },
    encoding: "utf8",
    timeout: 60_000,
  });
  assert.equal(child.status, 0, `https_client.mjs failed: ${child.stderr}`);
  return JSON.parse(child.stdout.trim().split("\n").pop());
}

test("edgelimit's package decides over HTTPS, trusting the gateway's CA", { skip: noGateway }, () => {
  assert.deepEqual(decide("ca.pem"), [
    { success: true, reason: null },
    { success: true, reason: null },
    { success: true, reason: null },
    { success: false, reason: null },
  ]);
});

test("a client that does not trust the certificate never reaches Redis", { skip: noGateway }, () => {
  const decisions = decide("other-ca.pem");
  for (const decision of decisions) assert.deepEqual(decision, { success: false, reason: "error" });
});
