// Writes the Lua scripts of @upstash/ratelimit's dist/index.mjs to one .lua file each, checking every
// text against the SHA-1 the SDK itself ships for it (it calls EVALSHA with that SHA-1):
//   node gateway/src/known_scripts/extract.mjs node_modules/@upstash/ratelimit/dist/index.mjs \
//        gateway/src/known_scripts/upstash_ratelimit_2_2_0
import fs from "node:fs"; import crypto from "node:crypto";
const src = fs.readFileSync(process.argv[2], "utf8");
const out = process.argv[3]; fs.mkdirSync(out, {recursive: true});
const re = /var (\w+Script\d?) = `([^`]*)`;/g; let m;
const hashes = [...src.matchAll(/script: (\w+),\s*hash: "([0-9a-f]+)"/g)].map(x => [x[1], x[2]]);
const want = Object.fromEntries(hashes);
while ((m = re.exec(src))) {
  const [_, name, raw] = m;
  const tokenBucketIdentifierNotFound = -1; const text = eval("`" + raw + "`");
  const sha = crypto.createHash("sha1").update(text).digest("hex");
  if (name in want && want[name] !== sha) throw new Error("MISMATCH " + name); console.log(name, sha);
  const file = name.replace(/([A-Z])/g, c => "_" + c.toLowerCase()) + ".lua";
  fs.writeFileSync(`${out}/${file}`, text);
}
