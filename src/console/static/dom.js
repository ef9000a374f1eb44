// DOM helpers: every text goes in as a text node (no innerHTML), so nothing a session or an
// event carries can run as markup.

/** el("td", { class: "mono", "data-testid": "x" }, "text", child, …); `on*` attributes take listeners. */
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  append(e, children);
  return e;
}

function append(e, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** Replaces the children of `e`. */
export function fill(e, ...children) {
  e.replaceChildren();
  append(e, children);
  return e;
}

// The browser's locale decides the order and the clock: 24-hour where the locale writes it so.
const DATES = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });

/** "2026-12-01T14:40:00.123Z" → a date and time in the browser's locale; "" stays "". */
export function when(ts) {
  if (!ts) return "";
  const d = new Date(ts);
  return Number.isNaN(d.getTime()) ? ts : DATES.format(d);
}

/** "LIFECYCLE_STATE_STRANDED" → "stranded". */
export function enumName(value, prefix) {
  return typeof value === "string" ? value.replace(prefix, "").toLowerCase() : "";
}

export function short(id) {
  return id ? id.slice(0, 8) : "";
}

/** Shows an error (or clears with undefined) in the status line. */
export function status(err) {
  const s = document.getElementById("status");
  s.textContent = err ? `${err.code ? `${err.code}${err.reason ? ` ${err.reason}` : ""}: ` : ""}${err.message}` : "";
}
