/**
 * Renders the table of docs/errors.md from src/platform/error-reasons.ts, the one list of the
 * reasons BerthError may carry, between the `reasons` markers (the prose around it is hand-written).
 *
 *   npm run docs:errors             # rewrite the table
 *   npm run docs:errors -- --check  # exit 1 when docs/errors.md is stale (CI)
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { REASON_ROWS } from "../src/platform/error-reasons.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const FILE = path.join(ROOT, "docs/errors.md");
const BEGIN = "<!-- reasons:begin (generated from src/platform/error-reasons.ts by `npm run docs:errors`; do not edit) -->";
const END = "<!-- reasons:end -->";

/** Status codes in the order a reader meets them: the caller's mistakes first, the server's last. */
const CODE_ORDER = [
  "INVALID_ARGUMENT", "NOT_FOUND", "ALREADY_EXISTS", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED", "UNAUTHENTICATED", "CANCELLED", "DEADLINE_EXCEEDED", "UNAVAILABLE", "UNIMPLEMENTED", "INTERNAL",
];

function table(): string {
  const rows = REASON_ROWS.map((r, i) => ({ r, i }));
  for (const { r } of rows) if (!CODE_ORDER.includes(r.code)) throw new Error(`error-reasons.ts: unknown code ${r.code}`);
  rows.sort((a, b) => CODE_ORDER.indexOf(a.r.code) - CODE_ORDER.indexOf(b.r.code) || a.i - b.i);
  const cell = (s: string): string => s.replace(/\|/g, "\\|");
  const lines = ["| code | reason | when | metadata |", "|---|---|---|---|"];
  for (const { r } of rows) {
    const reasons = r.reasons.length === 0 ? "—" : r.reasons.map((x) => `\`${x}\``).join(", ");
    lines.push(`| \`${r.code}\` | ${reasons} | ${cell(r.when)} | ${cell(r.metadata)} |`);
  }
  return lines.join("\n");
}

const current = readFileSync(FILE, "utf8");
const start = current.indexOf(BEGIN);
const end = current.indexOf(END);
if (start < 0 || end < start) throw new Error(`docs/errors.md lacks the markers ${BEGIN} … ${END}`);
const next = `${current.slice(0, start)}${BEGIN}\n${table()}\n${current.slice(end)}`;
if (process.argv.includes("--check")) {
  if (next !== current) {
    console.error("docs/errors.md is stale: run 'npm run docs:errors' and commit the result");
    process.exit(1);
  }
} else {
  writeFileSync(FILE, next);
}
