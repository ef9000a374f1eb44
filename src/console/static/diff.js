// Unified diffs as the server sends them (DiffWorkspace, DiffChangeset: git's format, the bytes in
// base64): split per file, each matched to its PathDiff entry, and drawn a slice of lines at a
// time, so that a 10,000-line diff never holds the page for longer than one slice.
import { el, enumName } from "./dom.js";

/** Lines drawn per task; between two slices the page answers clicks and keys. */
const SLICE = 250;

/** proto3 JSON bytes (base64) → text; bytes that are not UTF-8 show as U+FFFD, as git would print them. */
export function decodePatch(b64) {
  if (!b64) return "";
  const bin = atob(b64);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return new TextDecoder().decode(bytes);
}

const ESCAPES = { n: 10, t: 9, '"': 34, "\\": 92, a: 7, b: 8, f: 12, r: 13, v: 11 };

/** git's C-quoted path ("src/\303\251.txt", quotes included) → the path; an unquoted one as it is. */
function unquote(s) {
  if (!s.startsWith('"') || !s.endsWith('"') || s.length < 2) return s;
  const bytes = [];
  const enc = new TextEncoder();
  for (let i = 1; i < s.length - 1; i++) {
    if (s[i] !== "\\") {
      bytes.push(...enc.encode(s[i]));
      continue;
    }
    const n = s[++i];
    if (n >= "0" && n <= "7") {
      bytes.push(parseInt(s.slice(i, i + 3), 8));
      i += 2;
    } else bytes.push(ESCAPES[n] ?? n.charCodeAt(0));
  }
  return new TextDecoder().decode(new Uint8Array(bytes));
}

/** "a/x b/x" (or quoted) → "x": git names a path twice in the header, the same both sides unless renamed. */
function headerPath(rest) {
  if (rest.startsWith('"')) {
    const m = /^("(?:[^"\\]|\\.)*") /.exec(rest);
    return m ? unquote(m[1]).replace(/^a\//, "") : undefined;
  }
  if (rest.length % 2 === 0) return undefined;
  const half = (rest.length - 1) / 2;
  const [a, b] = [rest.slice(0, half), rest.slice(half + 1)];
  return a.startsWith("a/") && b.startsWith("b/") && a.slice(2) === b.slice(2) ? a.slice(2) : undefined;
}

/** A "--- a/x" or "+++ b/x" name; /dev/null → undefined. git ends a name holding a space with a tab. */
function sideName(s, prefix) {
  const name = unquote(s.replace(/\t$/, ""));
  return name === "/dev/null" ? undefined : name.replace(prefix, "");
}

/**
 * The patch's files: { path, oldPath, binary, lines }, `lines` as { kind: "hunk" | "add" | "del" |
 * "ctx" | "note", text, old, new } with each side's line number (for comments on a line).
 */
export function splitPatch(text) {
  const files = [];
  let f;
  let oldNo = 0;
  let newNo = 0;
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  for (const line of lines) {
    if (line.startsWith("diff --git ")) {
      f = { header: line.slice(11), meta: {}, binary: false, lines: [], inHunks: false };
      files.push(f);
      continue;
    }
    if (!f) continue;
    if (!f.inHunks) {
      if (line.startsWith("rename from ")) f.meta.renameFrom = unquote(line.slice(12));
      else if (line.startsWith("rename to ")) f.meta.renameTo = unquote(line.slice(10));
      else if (line.startsWith("--- ")) f.meta.minus = sideName(line.slice(4), /^a\//);
      else if (line.startsWith("+++ ")) f.meta.plus = sideName(line.slice(4), /^b\//);
      else if (line.startsWith("Binary files ") || line === "GIT binary patch") f.binary = true;
    }
    const hunk = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
    if (hunk) {
      f.inHunks = true;
      oldNo = Number(hunk[1]);
      newNo = Number(hunk[2]);
      f.lines.push({ kind: "hunk", text: line });
    } else if (!f.inHunks || f.binary) continue;
    else if (line.startsWith("+")) f.lines.push({ kind: "add", text: line.slice(1), new: newNo++ });
    else if (line.startsWith("-")) f.lines.push({ kind: "del", text: line.slice(1), old: oldNo++ });
    else if (line.startsWith("\\")) f.lines.push({ kind: "note", text: line });
    else f.lines.push({ kind: "ctx", text: line.slice(1), old: oldNo++, new: newNo++ });
  }
  return files.map((x) => {
    const same = headerPath(x.header);
    return { path: x.meta.renameTo ?? x.meta.plus ?? same ?? x.meta.minus, oldPath: x.meta.renameFrom ?? x.meta.minus ?? same, binary: x.binary, lines: x.lines };
  });
}

/** The patch's file for one PathDiff (by its path; a rename is one entry, found by either name). */
export function fileOf(files, pathDiff) {
  return files.find((f) => f.path === pathDiff.path) ?? files.find((f) => pathDiff.oldPath && f.oldPath === pathDiff.oldPath);
}

function fileHeader(pd, conflict) {
  const change = pd.oldPath ? "renamed" : enumName(pd.change, "FILE_CHANGE_");
  return el("div", { class: "diff-head" },
    el("span", { class: "mono", "data-testid": "diff-path" }, pd.oldPath ? `${pd.oldPath} → ${pd.path}` : pd.path),
    el("span", { class: "badge", "data-testid": "diff-change" }, change),
    pd.binary ? el("span", { class: "badge", "data-testid": "diff-binary" }, "binary file, no text diff") : el("span", { class: "muted" }, `+${pd.linesAdded ?? 0} −${pd.linesRemoved ?? 0}`),
    conflict ? el("span", { class: "badge conflict", "data-testid": "diff-conflict", title: conflict.reason }, `conflict between sessions ${conflict.sessionIds.map((s) => s.slice(0, 8)).join(", ")} (${enumName(conflict.reason, "")}): the first session's version is shown`) : null);
}

function lineRow(l) {
  const row = document.createElement("div");
  row.className = `dl dl-${l.kind}`;
  row.dataset.kind = l.kind;
  if (l.old !== undefined) row.dataset.old = l.old;
  if (l.new !== undefined) row.dataset.new = l.new;
  const cell = (cls, t) => {
    const s = document.createElement("span");
    s.className = cls;
    s.textContent = t;
    row.append(s);
  };
  if (l.kind === "hunk" || l.kind === "note") cell("code", l.text);
  else {
    cell("ln", l.old ?? "");
    cell("ln", l.new ?? "");
    cell("code", `${l.kind === "add" ? "+" : l.kind === "del" ? "-" : " "}${l.text}`);
  }
  return row;
}

/**
 * Draws `entries` ({ pathDiff, file, conflict }) into `container`, headers at once and lines a slice
 * per task; container's data-rendered is "true" once every line is in. `decorate(row, line,
 * pathDiff)` sees each row before it is placed and may return a node to place after it. Returns
 * stop(), which abandons the drawing (the view was left or redrawn).
 */
export function drawDiff(container, entries, decorate = () => {}) {
  let stopped = false;
  container.replaceChildren();
  container.dataset.rendered = "false";
  const queue = [];
  for (const { pathDiff, file, conflict } of entries) {
    const body = el("div", { class: "diff-lines", "data-testid": "diff-lines" });
    const section = el("section", { class: conflict ? "diff-file has-conflict" : "diff-file", "data-testid": "diff-file", "data-path": pathDiff.path, "data-conflict": conflict ? "true" : "false" }, fileHeader(pathDiff, conflict), body);
    container.append(section);
    if (pathDiff.binary || file?.binary) continue;
    if (!file || file.lines.length === 0) body.append(el("div", { class: "muted" }, "No text change (mode or empty file)."));
    else queue.push({ body, lines: file.lines, at: 0, pathDiff });
  }
  const step = () => {
    if (stopped) return;
    let budget = SLICE;
    while (budget > 0 && queue.length > 0) {
      const job = queue[0];
      const frag = document.createDocumentFragment();
      const end = Math.min(job.lines.length, job.at + budget);
      for (let i = job.at; i < end; i++) {
        const row = lineRow(job.lines[i]);
        const after = decorate(row, job.lines[i], job.pathDiff);
        frag.append(row);
        if (after) frag.append(after);
      }
      job.body.append(frag);
      budget -= end - job.at;
      job.at = end;
      if (job.at === job.lines.length) queue.shift();
    }
    if (queue.length > 0) setTimeout(step, 0);
    else container.dataset.rendered = "true";
  };
  step();
  return () => {
    stopped = true;
  };
}
