import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const SCRIPT = fileURLToPath(new URL("../../scripts/check-engines.mjs", import.meta.url));
const NODE = "20.20.2";

// engines.node → whether Node 20.20.2 satisfies it, as node-semver (includePrerelease, which npm's
// engine check uses) answers; null: not a valid range, which npm counts as a mismatch too.
const CASES: [unknown, boolean | null][] = [
  [">=20", true],
  [">= 18.x", true],
  [">=20.11", true],
  ["^18.18.0 || ^20.9.0 || >=21.1.0", true],
  ["^20.19.0 || >=22.12.0", true],
  ["20.x", true],
  ["~20.20", true],
  ["18 - 20", true],
  ["18.1.2 - 20.20.2", true],
  ["*", true],
  ["", true],
  ["v20.20.2", true],
  ["> 20.19 < 21", true],
  [">=22", false],
  [">= 22.x", false],
  [">=22.12.0", false],
  ["^20.21", false],
  ["~20.19", false],
  ["<20", false],
  [">20", false],
  ["20.20.3 - 22", false],
  ["<20.20.2", false],
  [">*", false],
  ["^0.2.3", false],
  ["node >= 0.4", null],
  ["x.1", null],
  [["node >= 0.4"], null],
];

describe("scripts/check-engines.mjs", () => {
  const root = mkdtempSync(path.join(tmpdir(), "berth-engines-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  const write = (dir: string, pkg: Record<string, unknown>) => {
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, "package.json"), JSON.stringify(pkg));
  };
  const nm = path.join(root, "node_modules");
  CASES.forEach(([range], i) => write(path.join(nm, `case-${i}`), { name: `case-${i}`, version: "1.0.0", engines: { node: range } }));
  write(path.join(nm, "no-engines"), { name: "no-engines", version: "1.0.0" });
  // Scoped, and nested under another package's node_modules.
  write(path.join(nm, "@scope/outer"), { name: "@scope/outer", version: "3.4.0", engines: { node: ">=18" } });
  write(path.join(nm, "@scope/outer/node_modules/@scope/inner"), {
    name: "@scope/inner",
    version: "3.0.0",
    engines: { node: ">= 22.x" },
  });

  const run = (...args: string[]) => spawnSync(process.execPath, [SCRIPT, "--root", root, ...args], { encoding: "utf8" });

  it("names exactly the packages whose engines.node excludes the given Node, and exits 1", () => {
    const r = run("--node", NODE);
    expect(r.status).toBe(1);
    const named = [...r.stderr.matchAll(/^ {2}(\S+)@/gm)].map((m) => m[1]).sort();
    const expected = [
      ...CASES.flatMap(([, ok], i) => (ok === true ? [] : [`case-${i}`])),
      "@scope/inner",
    ].sort();
    expect(named).toEqual(expected);
    expect(r.stderr).toContain(`@scope/inner@3.0.0  engines.node ">= 22.x" (excludes)  ${path.join("node_modules/@scope/outer/node_modules/@scope/inner")}`);
    expect(r.stderr).toContain('engines.node "node >= 0.4" (cannot parse)');
  });

  it("passes when every range admits the Node", () => {
    const ok = mkdtempSync(path.join(tmpdir(), "berth-engines-ok-"));
    try {
      write(path.join(ok, "node_modules/a"), { name: "a", version: "1.0.0", engines: { node: ">=20" } });
      write(path.join(ok, "node_modules/@s/b"), { name: "@s/b", version: "1.0.0", engines: { node: "^18 || ^20" } });
      const r = spawnSync(process.execPath, [SCRIPT, "--root", ok, "--node", NODE], { encoding: "utf8" });
      expect(r.stderr).toBe("");
      expect(r.stdout).toContain(`all 2 installed packages admit Node ${NODE}`);
      expect(r.status).toBe(0);
    } finally {
      rmSync(ok, { recursive: true, force: true });
    }
  });

  it("fails, rather than passing, when there is nothing installed to check", () => {
    const empty = mkdtempSync(path.join(tmpdir(), "berth-engines-empty-"));
    try {
      const r = spawnSync(process.execPath, [SCRIPT, "--root", empty], { encoding: "utf8" });
      expect(r.status).toBe(2);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
