// Moves files (git mv) and rewrites every relative import/export/dynamic-import/URL specifier that
// points at a moved file, in every .ts/.mts/.mjs/.js file of the tree. Usage: node move.mjs map.txt
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
const root = process.cwd();
const pairs = fs.readFileSync(process.argv[2], "utf8").split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("#")).map((l) => l.split(/\s+/));
const map = new Map(pairs.map(([a, b]) => [path.resolve(root, a), path.resolve(root, b)]));
const files = execFileSync("git", ["ls-files", "-co", "--exclude-standard"], { encoding: "utf8" }).split("\n").filter((f) => /\.(ts|mts|mjs|js|cjs)$/.test(f) && !f.startsWith("node_modules/") && !f.startsWith("gen/"));
const spec = /((?:from|import|export\s+\*\s+from|import\()\s*["'])(\.{1,2}\/[^"']+)(["'])|(new URL\(\s*["'])(\.{1,2}\/[^"']+)(["'])|(vi\.mock\(\s*["'])(\.{1,2}\/[^"']+)(["'])/g;
function target(abs) {
  // import specifiers say .js for .ts files
  for (const cand of [abs, abs.replace(/\.js$/, ".ts"), abs.replace(/\.mjs$/, ".mts")]) if (map.has(cand)) return { from: cand, to: map.get(cand) };
  return undefined;
}
let changed = 0;
for (const rel of files) {
  const abs = path.resolve(root, rel);
  const newAbs = map.get(abs) ?? abs;
  let text = fs.readFileSync(abs, "utf8");
  const out = text.replace(spec, (m, p1, s1, q1, p2, s2, q2, p3, s3, q3) => {
    const pre = p1 ?? p2 ?? p3, s = s1 ?? s2 ?? s3, q = q1 ?? q2 ?? q3;
    const resolved = path.resolve(path.dirname(abs), s);
    const t = target(resolved);
    let dest = resolved;
    if (t) dest = t.to.endsWith(".ts") && resolved.endsWith(".js") ? t.to.replace(/\.ts$/, ".js") : t.to;
    let r = path.relative(path.dirname(newAbs), dest).split(path.sep).join("/");
    if (!r.startsWith(".")) r = "./" + r;
    return pre + r + q;
  });
  if (out !== text) { fs.writeFileSync(abs, out); changed++; }
}
for (const [a, b] of map) {
  fs.mkdirSync(path.dirname(b), { recursive: true });
  execFileSync("git", ["mv", path.relative(root, a), path.relative(root, b)]);
}
console.log(`rewrote ${changed} files, moved ${map.size}`);
