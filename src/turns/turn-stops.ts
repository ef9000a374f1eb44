/**
 * Stopping a running turn from outside it — CancelTurn, its session's end, a graceful stop — and
 * waiting for such a stop's capture (ResumeSession).
 *
 * A stop is marked synchronously (the turn is no longer running the moment it is asked for) and
 * its environment's capture and teardown are queued on the workspace's lane, so the turn's
 * directory is never deleted while the turn runs and nothing it wrote is lost. When the stop's
 * capture writes into a session that has just ended (stranded under the turn), the turn's row
 * stays RUNNING until that capture is done: a RUNNING row means "its capture may still come" to
 * every instance, and captureSettled is how a ResumeSession, here or elsewhere, waits for it.
 */
import type { Logger } from "pino";
import type { Clock } from "../platform/clock.js";
import { BerthError } from "../platform/errors.js";
import type { Workspace } from "../sessions/workspace.js";
import type { KnownTurns } from "./idempotency.js";
import type { EvictReason, Pool, WsState } from "./pool.js";
import type { CaptureMode, Teardowns } from "./teardown.js";
import type { TurnRecords } from "./turn-records.js";
import type { Turn } from "./turn.js";

export interface TurnStopsDeps {
  readonly clock: Clock;
  readonly logger: Logger;
  readonly pool: Pool;
  readonly known: KnownTurns;
  readonly records: TurnRecords;
  readonly teardowns: Teardowns;
  /** How long a graceful stop waits for the capture of the running turns (default 10 s). */
  readonly shutdownGraceMs?: number;
  /** Keeps a background promise (a stop's capture and teardown) until the scheduler stops. */
  readonly track: (p: Promise<unknown>) => void;
}

export class TurnStops {
  constructor(private readonly deps: TurnStopsDeps) {}

  async cancelTurn(turnId: string, assertOwner: (sessionId: string) => Promise<Workspace>): Promise<{ cancelled: boolean; settled: boolean }> {
    const turn = this.deps.known.get(turnId) ?? (await this.deps.records.turnFromDb(turnId));
    await assertOwner(turn.sessionId);
    if (turn.state !== "running" || !this.deps.known.has(turn.id)) {
      return { cancelled: false, settled: turn.settledDone || !this.deps.known.has(turn.id) };
    }
    const state = this.deps.pool.get(turn.workspaceId)!;
    const settled = this.stopTurn(state, turn, "cancelled", "cancelled");
    await this.finishOutsideLane(state, this.deps.records.finishInDb(turn, "cancelled", { reason: "cancelled" }, [this.deps.records.turnEvent(state.ws, "turn.cancelled", turn, { reason: "cancelled" })]));
    const done = await Promise.race([settled.then(() => true, () => true), delay(50).then(() => false)]);
    return { cancelled: true, settled: done };
  }

  /**
   * A session ended (stranded, abandoned, destroyed, expired): its running turn stops; its
   * environment is captured, then torn down. Stranded: captured into the stranded session's
   * overlay ("ending"), which ResumeSession restores; the turn's row is finished after that.
   * Abandoned or destroyed: the overlay was deleted in the ending's own transaction, so there is
   * nothing to capture into; the directory is discarded (the ending was asked for, or the
   * changeset is terminal: GC destroys only terminal work).
   */
  sessionEnded(workspaceId: string, kind: string): void {
    const state = this.deps.pool.get(workspaceId);
    if (!state) return;
    const mode: CaptureMode = kind === "session.stranded" ? "ending" : "discard";
    const running = state.turn;
    if (running) {
      void this.stopTurn(state, running, "cancelled", kind, "session-ended", mode, true); // tracked; its failures are logged by the teardown
      return;
    }
    if (state.env) {
      this.deps.pool.unseat(state);
      this.deps.track(this.deps.pool.enqueue(state, () => this.deps.teardowns.evictParked(state, "session-ended", mode)));
    }
  }

  /**
   * Resolves once no live instance has a RUNNING turn of the workspace: the capture of a
   * session stranded under a running turn is done (the owner finishes the turn's row after it).
   * UNAVAILABLE CAPTURE_PENDING (retryable) when that takes longer than CAPTURE_WAIT_MS, or than
   * the caller can wait: `callDeadline` (epoch ms) less what the caller's own work needs after
   * the wait, so that the caller hears why rather than its deadline passing (a capture on a
   * loaded machine takes seconds; an agent's deadline may be shorter).
   */
  async captureSettled(workspaceId: string, callDeadline?: number): Promise<void> {
    const deadline = performance.now() + captureWaitMs(callDeadline, Date.now());
    for (;;) {
      // The capture here runs in the lane: waited for directly, but no longer than the wait allows.
      const local = this.deps.pool.get(workspaceId);
      const left = deadline - performance.now();
      if (local && left > 0) await Promise.race([local.lane.then(noop, noop), delay(left)]);
      const running = await this.deps.records.runningOnLiveInstance(workspaceId);
      if (!running) return;
      if (performance.now() >= deadline) {
        throw new BerthError("unavailable", "CAPTURE_PENDING", `the running turn ${running.id} of workspace ${workspaceId} is still being captured into the overlay; retry`, {
          workspace_id: workspaceId,
          turn_id: running.id,
          owner_instance: running.instance_id ?? "",
        });
      }
      await delay(50);
    }
  }

  /**
   * Graceful stop: every running turn here is captured into the overlay (its session is still
   * active: ordinary writes, claims included), its directory torn down and its row finished
   * (CANCELLED, server_shutdown) — within the shutdown grace period. What is not done by then
   * stays in its directory with its saved manifest, for the next start (recoverLeftovers).
   */
  async captureRunning(): Promise<void> {
    const jobs: Promise<unknown>[] = [];
    for (const t of [...this.deps.known.values()]) {
      const state = t.state === "running" ? this.deps.pool.get(t.workspaceId) : undefined;
      if (state && state.turn === t) jobs.push(this.stopTurn(state, t, "cancelled", "server_shutdown", "server-shutdown", "capture", true));
    }
    if (jobs.length === 0) return;
    const grace = this.deps.shutdownGraceMs ?? 10_000;
    const done = await Promise.race([Promise.allSettled(jobs).then(() => true), delay(grace).then(() => false)]);
    if (done) this.deps.logger.info({ turns: jobs.length }, "turns: running turns captured into the overlay at shutdown");
    else this.deps.logger.error({ turns: jobs.length, graceMs: grace }, "turns: the capture of running turns did not finish within the shutdown grace period; their directories stay for the next start");
  }

  /**
   * Marks a running turn stopped (synchronously) and queues its environment's capture and
   * teardown (returned). `finishAfter`: the turn's row is finished (CANCELLED, `reason`) in the
   * lane after the capture, not at once — so that a RUNNING row means "its capture may still
   * come" to every instance (ResumeSession waits for it: captureSettled).
   */
  private stopTurn(state: WsState, turn: Turn, to: "cancelled", reason: string, evict: EvictReason = "turn-cancelled", mode: CaptureMode = "capture", finishAfter = false): Promise<unknown> {
    turn.state = to;
    turn.endReason = reason;
    turn.endedAt = this.deps.clock.now();
    turn.abort.abort();
    if (state.turn === turn) state.turn = undefined;
    const settled = this.deps.pool.enqueue(state, async () => {
      await turn.started?.catch(() => {}); // ordering only: a failed start is the BeginTurn's error
      try {
        if (turn.env && state.env === turn.env) {
          await this.deps.teardowns.teardown(state, turn.env, evict, turn.sessionId, mode);
          if (!state.turn) this.deps.pool.unseat(state);
        }
      } finally {
        if (finishAfter) {
          await this.deps.records.finishInDb(turn, "cancelled", { reason }, [this.deps.records.turnEvent(state.ws, "turn.cancelled", turn, { reason })]).catch((err: unknown) => this.deps.logger.warn({ err, turnId: turn.id }, "turns: recording a cancelled turn failed"));
        }
      }
    }).finally(() => (turn.settledDone = true));
    turn.settled = settled;
    this.deps.track(settled);
    this.deps.known.forgetLater(turn);
    return settled;
  }

  /** A row update made outside the lane: the workspace's next turn insert waits for it (one RUNNING row per workspace). */
  private finishOutsideLane<T>(state: WsState, update: Promise<T>): Promise<T> {
    state.finishing = Promise.allSettled([state.finishing, update]);
    this.deps.pool.holdUntil(state, update); // the state (and its `finishing`) outlives the update
    return update;
  }
}

/** The longest ResumeSession waits for the capture of a stranded session's running turn. */
const CAPTURE_WAIT_MS = 10_000;
/** Of a call's time left, what is kept for its work after the capture wait (at most a quarter of it). */
const AFTER_CAPTURE_RESERVE_MS = 1_000;

/** How long a caller with `callDeadline` (epoch ms; none: CAPTURE_WAIT_MS) may wait for a capture, at `now`. */
export function captureWaitMs(callDeadline: number | undefined, now: number): number {
  if (callDeadline === undefined) return CAPTURE_WAIT_MS;
  const left = callDeadline - now;
  return Math.max(0, Math.min(CAPTURE_WAIT_MS, left - Math.min(AFTER_CAPTURE_RESERVE_MS, left / 4)));
}

function noop(): void {}

function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms).unref());
}
