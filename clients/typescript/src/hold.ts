/**
 * Keeps a session connected while held: a workspace is stranded once its lease
 * (BERTH_SESSION_LEASE_MS) passes without a Heartbeat, a call naming it, an open AttachSession
 * stream or a running turn. Two ways:
 *
 * - "heartbeat": a Heartbeat every third of the lease the server answers with;
 * - "attach": an AttachSession stream held open (its notices go to onEvent), opened again
 *   after a dropped connection; it ends when the session stops being active.
 *
 * Transient failures are retried; a refusal (SESSION_STRANDED, SESSION_NOT_FOUND, …) ends the
 * hold and rejects `done`. close() stops it and resolves once nothing is in flight.
 */
import type { Client } from "@connectrpc/connect";
import type { Event } from "../../../gen/berth/v1/event_pb.js";
import type { Workspace } from "../../../gen/berth/v1/types_pb.js";
import type { WorkspaceService } from "../../../gen/berth/v1/workspace_service_pb.js";
import { backoffDelay, sleep } from "./backoff.js";
import { isResumable, isTransient } from "./failures.js";

export interface HoldOptions {
  /** "heartbeat" (default) or "attach". */
  readonly via?: "heartbeat" | "attach";
  /** Heartbeat only: milliseconds between heartbeats (default: a third of the lease). */
  readonly intervalMs?: number;
  /** Attach only: the session's notices. */
  readonly onEvent?: (event: Event) => void;
  /** Told about each transient failure before it is retried. */
  readonly onRetry?: (error: unknown) => void;
}

export interface SessionHold {
  /** Resolves once the session is held (the first heartbeat answered, or the stream attached). */
  readonly ready: Promise<void>;
  /** Resolves when the hold stops (close(), or the session ended), rejects on a refusal. */
  readonly done: Promise<void>;
  /** The lease the last heartbeat was given, in milliseconds (heartbeat only). */
  readonly leaseMs: number | undefined;
  /** The workspace as attached (attach only). */
  readonly workspace: Workspace | undefined;
  /** Stops holding; resolves when the hold has stopped. */
  close(): Promise<void>;
}

export function holdSession(workspaces: Client<typeof WorkspaceService>, sessionId: string, options: HoldOptions = {}): SessionHold {
  const abort = new AbortController();
  const { signal } = abort;
  let markReady!: () => void;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  const state: { leaseMs: number | undefined; workspace: Workspace | undefined } = { leaseMs: undefined, workspace: undefined };

  async function heartbeats(): Promise<void> {
    let failures = 0;
    while (!signal.aborted) {
      let wait: number;
      try {
        const res = await workspaces.heartbeat({ sessionId }, { signal, timeoutMs: 10_000 });
        state.leaseMs = res.leaseMs;
        markReady();
        failures = 0;
        wait = options.intervalMs ?? Math.max(100, Math.floor(res.leaseMs / 3));
      } catch (err) {
        if (signal.aborted) return;
        if (!isTransient(err)) throw err;
        options.onRetry?.(err);
        wait = backoffDelay(failures++, { initialMs: 200, maxMs: 2_000 });
      }
      await sleep(wait, signal);
    }
  }

  async function attached(): Promise<void> {
    let failures = 0;
    while (!signal.aborted) {
      try {
        for await (const m of workspaces.attachSession({ sessionId }, { signal })) {
          failures = 0;
          if (m.message.case === "workspace") {
            state.workspace = m.message.value;
            markReady();
          } else if (m.message.case === "event") {
            options.onEvent?.(m.message.value);
          }
        }
        return; // the server ended it: the session is no longer active
      } catch (err) {
        if (signal.aborted) return;
        if (!isResumable(err)) throw err;
        options.onRetry?.(err);
        await sleep(backoffDelay(failures++, { initialMs: 200, maxMs: 2_000 }), signal);
      }
    }
  }

  const done = options.via === "attach" ? attached() : heartbeats();
  // A hold that fails before it is ready must not leave `ready` pending for ever.
  done.then(markReady, markReady);
  return {
    ready,
    done,
    get leaseMs() {
      return state.leaseMs;
    },
    get workspace() {
      return state.workspace;
    },
    async close() {
      abort.abort();
      await done.catch(() => undefined);
    },
  };
}
