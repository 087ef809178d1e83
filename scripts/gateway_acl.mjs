// The Redis ACL user the gateway connects as, with the rules gateway/README.md ("Redis ACL") gives
// operators: read from the README's `ACL SETUSER gateway on >PASSWORD …` line, as
// scripts/with_gateway.sh and test-support/ read it, so every harness runs the gateway as documented.
import { readFileSync } from "node:fs";

const README = new URL("../gateway/README.md", import.meta.url);

/** The README's rules for the user `gateway`, its password `password`; throws if the line is missing. */
export function gatewayAclRules(password) {
  const line = readFileSync(README, "utf8")
    .split("\n")
    .find((text) => text.startsWith("ACL SETUSER gateway "));
  if (!line) throw new Error("gateway/README.md has no 'ACL SETUSER gateway …' line");
  return line.slice("ACL SETUSER gateway ".length).trim().split(/\s+/).map((rule) => (rule === ">PASSWORD" ? `>${password}` : rule));
}

/** The same user as a line of a Redis ACL file (`--aclfile`), so a server has it from its start. */
export function gatewayAclFileLine(password) {
  return `user gateway ${gatewayAclRules(password).join(" ")}\n`;
}
