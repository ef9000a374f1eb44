// The admin buttons: the same lifecycle RPCs an agent or operator calls (docs/lifecycle.md).
// Shown only to a caller the server treats as an admin (app.js asks GetPoolStats, admin-only);
// the server checks again on every call.
import { el, status } from "./dom.js";
import { call } from "./rpc.js";

const REASON = "console";

async function run(button, fn) {
  button.disabled = true;
  try {
    await fn();
    status(undefined);
  } catch (err) {
    status(err);
  } finally {
    button.disabled = false;
  }
}

/** A button that asks for a second click before it acts (an abandon cannot be undone). */
function confirming(label, testid, fn) {
  let armed = false;
  const b = el("button", {
    class: "danger",
    "data-testid": testid,
    onclick: () => {
      if (!armed) {
        armed = true;
        b.textContent = `Really ${label.toLowerCase()}?`;
        return;
      }
      void run(b, fn);
    },
  }, label);
  return b;
}

/** The buttons for one session in state `state` ("active", "stranded", …); `done` runs after a success. */
export function adminButtons(session, state, done) {
  const buttons = [];
  if (state === "active") {
    const strand = el("button", { "data-testid": "strand", onclick: () => void run(strand, async () => {
      await call("WorkspaceService", "StrandSession", { sessionId: session.sessionId, reason: REASON });
      done();
    }) }, "Strand");
    buttons.push(strand);
  }
  if (state === "stranded") {
    const resume = el("button", { "data-testid": "resume", onclick: () => void run(resume, async () => {
      // As the session's own agent: the resumed session is its, not the operator's.
      const r = await call("WorkspaceService", "ResumeSession", { deadSessionId: session.sessionId, agentId: session.agentId });
      done(r.newSessionId);
    }) }, "Resume");
    buttons.push(resume);
  }
  if (state === "active" || state === "stranded") {
    buttons.push(confirming("Abandon", "abandon", async () => {
      await call("WorkspaceService", "AbandonSession", { sessionId: session.sessionId, reason: REASON, cause: "ABANDON_CAUSE_ADMIN" });
      done();
    }));
  }
  return el("span", { class: "actions" }, buttons);
}
