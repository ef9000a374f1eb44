/**
 * How the scheduler learns that a session ended: it follows the session-ending events on the
 * event hub. Kept apart from the scheduler so the mechanism can be replaced without touching
 * the turn state machine — all the scheduler needs is `ended(workspaceId, kind)` being called.
 *
 * A watch that breaks is resumed (a missed end would leave a running turn and its environment
 * behind), except when the hub is stopping or event delivery is not running at all.
 */
import type { Logger } from "pino";
import type { EventHub } from "../delivery/hub.js";
import { BerthError } from "../platform/errors.js";

export const SESSION_ENDING = ["session.stranded", "session.abandoned", "session.destroyed", "session.expired"];

export async function watchSessionEnds(hub: EventHub, stop: AbortSignal, logger: Logger, ended: (workspaceId: string, kind: string) => void): Promise<void> {
  while (!stop.aborted) {
    try {
      for await (const e of hub.watch({ kinds: SESSION_ENDING }, stop)) ended(e.workspaceId, e.kind);
    } catch (err) {
      if (stop.aborted) return;
      if (err instanceof BerthError && (err.reason === "SERVER_STOPPING" || err.reason === "EVENTS_UNAVAILABLE")) return;
      logger.warn({ err }, "turns: the session-end watch ended; watching again");
      await delay(100);
    }
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms).unref());
}
