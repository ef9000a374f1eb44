// Previous / next over a keyset-paged list: the tokens of the pages seen so far are kept, so
// "previous" goes back without the server keeping any state.
import { el } from "./dom.js";

/** `load(token)` shows the page at `token` and resolves to its next_page_token. */
export function pager(load) {
  const tokens = [""];
  let index = 0;
  let next = "";
  const label = el("span", { "data-testid": "page-label" });
  const prev = el("button", { "data-testid": "prev-page", onclick: () => void go(index - 1) }, "Previous");
  const nextButton = el("button", { "data-testid": "next-page", onclick: () => void go(index + 1) }, "Next");
  const update = () => {
    prev.disabled = index === 0;
    nextButton.disabled = next === "";
    label.textContent = `page ${index + 1}`;
  };
  // One load at a time, in order: the page shown is always the answer to the latest request.
  let chain = Promise.resolve();
  const go = (i) =>
    (chain = chain.then(async () => {
      if (i > index) tokens[i] = next;
      index = i;
      next = await load(tokens[index]);
      update();
    }));
  return {
    element: el("div", { class: "pager" }, prev, label, nextButton),
    first: () => go(0),
    /** Reloads the page shown (same token): a live update of that page only. */
    reload: () => go(index),
    /** Whether the page shown is the last one (new entries appear at its end). */
    onLastPage: () => next === "",
  };
}
