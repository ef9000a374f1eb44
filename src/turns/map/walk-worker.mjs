// @ts-check
/**
 * Entry of the workspace-map walk's dedicated worker thread. Every filesystem call of the
 * walk happens here, synchronously, on this thread — not on the main thread and not on
 * libuv's shared threadpool (whose four threads also serve every fs.promises call and every
 * dns.lookup of the process: four wedged reads there stall the whole service).
 *
 * Protocol: the parent posts { id, root, options }; the worker answers { id, outcome }, with
 * the listing's arrays transferred rather than copied (listing.mjs). One walk at a time: the walk
 * is synchronous, so a second message would queue behind it anyway — the parent never sends
 * one before the answer.
 */
import { parentPort } from "node:worker_threads";
import { walkTree } from "./walk-core.mjs";

if (!parentPort) throw new Error("walk-worker.mjs must run as a worker thread");
const port = parentPort;

port.on("message", (/** @type {{ id: number, root: string, options: import("./walk-core.d.mts").WalkOptions }} */ msg) => {
  let outcome;
  try {
    outcome = walkTree(msg.root, msg.options);
  } catch (err) {
    outcome = { kind: "error", code: "EWALK", message: err instanceof Error ? err.message : String(err) };
  }
  // The listing's names are one string (one copy); its arrays are moved, not copied.
  port.postMessage({ id: msg.id, outcome }, outcome.kind === "ok" ? [outcome.listing.kinds.buffer, outcome.listing.kids.buffer] : []);
});
