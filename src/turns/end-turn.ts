/**
 * EndTurn: the turn's capture, its row finished, and where its environment goes next.
 *
 * The capture runs first, in the workspace's lane, and a capture that cannot complete keeps the
 * turn RUNNING and its directory untouched (CAPTURE_INCOMPLETE: EndTurn is called again): nothing
 * the agent wrote is lost by ending the turn. Only once the row holds the outcome is the turn marked ended here; then a COMPLETED or
 * AWAITING_APPROVAL turn parks its environment for the session's next turn (torn down when the
 * pool has no room), and a FAILED one tears it down. A retried EndTurn is answered from the
 * first one's result, whichever instance ended the turn.
 */
import type { Clock } from "../platform/clock.js";
import { failedPrecondition } from "../platform/errors.js";
import type { Workspace } from "../sessions/workspace.js";
import { captureIncomplete, type Capture, type LeftOut } from "./capture.js";
import type { AgentCommits } from "./env-git.js";
import type { KnownTurns } from "./idempotency.js";
import type { Pool } from "./pool.js";
import type * as store from "./store.js";
import type { Teardowns } from "./teardown.js";
import type { TurnRecords } from "./turn-records.js";
import type { Turn, TurnExit } from "./turn.js";

/** EndTurn's answer: the turn, what its capture wrote into the overlay, and what it left out on purpose. */
export interface EndTurnResult {
  readonly turn: Turn;
  readonly captured: string[];
  readonly leftOut: LeftOut[];
}

export interface EndTurnDeps {
  readonly clock: Clock;
  readonly pool: Pool;
  readonly known: KnownTurns;
  readonly records: TurnRecords;
  readonly capture: Capture;
  readonly teardowns: Teardowns;
}

export class TurnEnds {
  constructor(private readonly deps: EndTurnDeps) {}

  /**
   * `exit`: how the turn's command ended, as the client says (recorded with the turn, and on its
   * turn.ended / turn.parked events). The capture also keeps the messages of the agent's own
   * commits in the environment (capture.ts commitMessages).
   */
  async endTurn(turnId: string, outcome: store.OutcomeName, exit: TurnExit, assertOwner: (sessionId: string) => Promise<Workspace>): Promise<EndTurnResult> {
    const turn = this.deps.known.get(turnId) ?? (await this.deps.records.turnFromDb(turnId));
    await assertOwner(turn.sessionId);
    if (turn.state === "running" && !this.deps.known.has(turn.id)) {
      throw failedPrecondition("TURN_NOT_ON_THIS_SERVER", `turn ${turnId} runs on another server`, { turn_id: turnId });
    }
    if (turn.state !== "running") return alreadyFinished(turn, outcome);
    // Ordering only: a failed start is the BeginTurn's error (and logged by begin-turn.ts acquire()).
    await turn.started?.catch(() => {});
    const state = this.deps.pool.get(turn.workspaceId);
    // A start that failed meanwhile may have left nothing (the state forgotten): the turn is not running.
    if (!state) return alreadyFinished(turn, outcome);
    return this.deps.pool.enqueue(state, async () => {
      if (turn.state !== "running") return alreadyFinished(turn, outcome);
      const env = turn.env;
      let captured: string[] = [];
      let leftOut: LeftOut[] = [];
      let commits: AgentCommits = { head: undefined, messages: [] };
      if (env && state.env === env) {
        const [r, c] = await Promise.all([this.deps.capture.capture(state.ws, env), this.deps.capture.commitMessages(state.ws, env)]);
        captured = r.captured;
        leftOut = r.leftOut;
        commits = c;
        if (r.failed.length > 0) throw captureIncomplete(turnId, r);
      }
      const now = this.deps.clock.now();
      const park = outcome === "failed" ? undefined : outcome === "completed" ? "idle" : "approval";
      const events = [this.deps.records.turnEvent(state.ws, "turn.ended", turn, { outcome, exit })];
      if (park) events.push(this.deps.records.turnEvent(state.ws, "turn.parked", turn, { outcome, exit }));
      await this.deps.records.finishEnded(turn, outcome, now, { captured, leftOut, exit, commitMessages: commits.messages }, events);
      // The row holds them: the next turn in this environment keeps only commits made after.
      if (env && commits.head !== undefined) env.headSeen = commits.head;
      turn.state = "ended";
      turn.outcome = outcome;
      turn.capturedPaths = captured;
      turn.leftOut = leftOut;
      turn.exit = exit;
      turn.commitMessages = commits.messages;
      turn.endedAt = now;
      turn.abort.abort();
      turn.settledDone = true;
      if (state.turn === turn) state.turn = undefined;
      this.deps.known.forgetLater(turn);
      if (!env || state.env !== env) return { turn, captured, leftOut };
      if (!park) {
        await this.deps.teardowns.teardown(state, env, "turn-failed", turn.sessionId);
        this.deps.pool.unseat(state);
        return { turn, captured, leftOut };
      }
      if (!this.deps.pool.park(state, park, now)) await this.deps.teardowns.teardown(state, env, "capacity", turn.sessionId);
      return { turn, captured, leftOut };
    });
  }
}

/** A retried EndTurn with the same outcome gets the first one's answer, whichever instance ended it. */
function alreadyFinished(turn: Turn, outcome: store.OutcomeName): EndTurnResult {
  if (turn.state === "ended" && turn.outcome === outcome) return { turn, captured: [...(turn.capturedPaths ?? [])], leftOut: [...(turn.leftOut ?? [])] };
  throw failedPrecondition("TURN_NOT_RUNNING", `turn ${turn.id} is ${turn.state.toUpperCase()}${turn.endReason ? ` (${turn.endReason})` : ""}`, {
    turn_id: turn.id,
    state: turn.state.toUpperCase(),
    reason: turn.endReason,
    superseded_by: turn.supersededBy ?? "",
  });
}
