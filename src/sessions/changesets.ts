/**
 * A changeset is shared by the workspaces that work on it and moved by every instance; one
 * interned object per changeset, kept current here, is what lets them all see one state. Its
 * state machine's write path (TransitionChangeset) lives beside that cache so the two cannot
 * disagree.
 *
 * What the cache hears of a changeset (rows read or written here, another instance's transition
 * heard from the commit feed) comes in no fixed order; it takes a row only when the row's version
 * (changesets.version, bumped by the database in the statement that changes the state) is newer
 * than the one it holds. Not updated_at: each instance stamps it with its own clock, and an
 * instance whose clock is behind would have its transitions ignored by the others.
 */
import type { Logger } from "pino";
import { canTransition, isTerminal, sourcesOf } from "./changeset-states.js";
import type { Clock } from "../platform/clock.js";
import { CoalescedLookup } from "../platform/coalesced-lookup.js";
import { toSeq } from "../platform/schema.js";
import { type BerthError, failedPrecondition, notFound } from "../platform/errors.js";
import type { Changeset } from "./workspace.js";
import type { Change, UnitOfWork } from "../platform/unit-of-work.js";
import { changesetStateEnum } from "../platform/proto-enums.js";
import type { ChangesetStateName } from "../platform/schema.js";
import * as sqlRepo from "./registry.repository.js";
import * as historyRepo from "./changeset-history.repository.js";
import type { SessionHooks } from "./session-hooks.js";

export class Changesets {
  /**
   * Changesets of live workspaces, shared between the workspaces that reference them, with the
   * number of live workspaces that do: the entry goes with the last of them (retain / release),
   * so reading other sessions (another instance's, stranded, ended) never grows the cache.
   */
  private readonly changesets = new Map<string, { cs: Changeset; refs: number }>();
  /** The rows of changesets another instance moved, read again when this one hears of it (many in one statement). */
  private readonly heard: CoalescedLookup<string, sqlRepo.ChangesetRow>;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly clock: Clock,
    private readonly hooks: SessionHooks,
    private readonly logger: Logger,
  ) {
    this.heard = new CoalescedLookup((ids) => sqlRepo.findChangesets(uow.db, ids), { maxRunning: 2 });
  }

  /**
   * A live workspace references `cs`: the one interned object of its id (cs itself when none is
   * cached yet; otherwise the cached one, brought forward by cs if cs is newer).
   */
  retain(cs: Changeset): Changeset {
    const entry = this.changesets.get(cs.id);
    if (!entry) {
      this.changesets.set(cs.id, { cs, refs: 1 });
      return cs;
    }
    entry.refs++;
    if (entry.cs !== cs) bringForward(entry.cs, cs);
    return entry.cs;
  }

  /** A live workspace no longer references the changeset: forgotten with the last one. */
  release(changesetId: string): void {
    const entry = this.changesets.get(changesetId);
    if (!entry) return;
    if (--entry.refs <= 0) this.changesets.delete(changesetId);
  }

  /** Number of interned changesets (tests: bounded by the live workspaces). */
  get size(): number {
    return this.changesets.size;
  }

  /** Brings a cached changeset up to date with a row read or written elsewhere. */
  refreshChangeset(row: sqlRepo.ChangesetRow): Changeset {
    return this.internChangeset(row);
  }

  /** The changeset's state as a row read just now has it (a live session's check): the cached state follows, never backwards. */
  noteChangesetState(changesetId: string, state: ChangesetStateName, reason: string, updatedAt: number, version: number): void {
    const cs = this.changesets.get(changesetId)?.cs;
    if (cs) bringForward(cs, { state, reason, updatedAt, version });
  }

  /**
   * A transition committed (here or by another instance, heard from the commit feed): a cached
   * changeset is brought forward by its row, read after the commit. The event's own stamps are
   * not the order (see the top of this file); a row is.
   */
  noteTransitioned(changesetId: string): void {
    if (!this.changesets.has(changesetId)) return;
    this.heard.get(changesetId).then(
      (row) => {
        if (row) this.internChangeset(row);
      },
      // The next read of a live session's row (every call checks one) brings it forward instead.
      (err: unknown) => this.logger.warn({ err, changesetId }, "changeset not read again after its transition"),
    );
  }

  /**
   * `during`: work that must succeed for the transition to commit (the merge's ref update,
   * src/overlay/landing.ts), run in its transaction once the compare-and-set holds the row: a
   * racing transition waits for it, and when it throws nothing of the transition is written.
   */
  async transitionChangeset(changesetId: string, to: ChangesetStateName, reason: string, during?: (change: Change) => Promise<void>): Promise<Changeset> {
    return (await this.moveChangeset(changesetId, to, reason, { during })).changeset;
  }

  /**
   * Moves a changeset to `to`, by compare-and-set in SQL. With `expected`, only from that state
   * (STATE_MISMATCH otherwise), and a changeset already in `to` is answered as it is, unchanged:
   * a client retrying a transition that succeeded gets its success, not INVALID_TRANSITION.
   */
  async moveChangeset(changesetId: string, to: ChangesetStateName, reason: string, opts: MoveOptions = {}): Promise<{ changeset: Changeset; unchanged: boolean }> {
    const { during, expected } = opts;
    const now = this.clock.now();
    const outcome = await this.uow.run(async (change) => {
      const { trx } = change;
      const current = await sqlRepo.findChangeset(trx, changesetId);
      if (!current) throw changesetNotFound(changesetId);
      if (expected !== undefined) {
        if (current.state === to && expected !== to) return { row: current, unchanged: true };
        if (current.state !== expected) throw stateMismatch(changesetId, expected, current.state);
      }
      assertCanTransition(changesetId, current.state, to);
      // The compare-and-set: of two racing transitions from the same state, one updates, one finds nothing.
      const from = expected !== undefined ? [expected] : sourcesOf(to);
      const row = await sqlRepo.casChangesetState(trx, changesetId, from, to, reason, new Date(now));
      if (!row || row.state !== to) {
        const again = await sqlRepo.findChangeset(trx, changesetId);
        if (expected !== undefined && again?.state === to) return { row: again, unchanged: true };
        throw invalidTransition(changesetId, again?.state ?? current.state, to);
      }
      if (opts.guard) await opts.guard(change);
      if (during) await during(change);
      await recordMoves(change, this.hooks, [{ changesetId, repoId: row.repo_id, version: row.version, from: current.state, to, reason, who: opts.who ?? BERTH, at: now }]);
      return { row, unchanged: false };
    });
    return { changeset: this.internChangeset(outcome.row), unchanged: outcome.unchanged };
  }

  /**
   * The cached Changeset of a row's id (brought forward by a newer row), or a new one made from
   * the row and not cached: only a live workspace's admission (retain) caches it.
   */
  internChangeset(row: sqlRepo.ChangesetRow): Changeset {
    const cached = this.changesets.get(row.id)?.cs;
    if (cached) {
      bringForward(cached, changesetFromRow(row));
      return cached;
    }
    return changesetFromRow(row);
  }
}

/** `cs` takes the state of `seen` when seen's version is newer (the one rule of the cache's order). */
function bringForward(cs: Changeset, seen: Pick<Changeset, "state" | "reason" | "updatedAt" | "version">): void {
  if (seen.version <= cs.version) return;
  cs.state = seen.state;
  cs.reason = seen.reason;
  cs.updatedAt = seen.updatedAt;
  cs.version = seen.version;
}

/** CHANGESET_TERMINAL or INVALID_TRANSITION unless a changeset in `from` may move to `to`. */
export function assertCanTransition(changesetId: string, from: ChangesetStateName, to: ChangesetStateName): void {
  assertNotTerminal(changesetId, from);
  if (!canTransition(from, to)) throw invalidTransition(changesetId, from, to);
}

/** CHANGESET_TERMINAL when the changeset is MERGED, REJECTED or CLOSED. */
export function assertNotTerminal(changesetId: string, state: ChangesetStateName): void {
  if (isTerminal(state)) {
    throw failedPrecondition("CHANGESET_TERMINAL", `changeset ${changesetId} is ${state.toUpperCase()}, a terminal state`, {
      changeset_id: changesetId,
      state: state.toUpperCase(),
    });
  }
}

function invalidTransition(changesetId: string, from: ChangesetStateName, to: ChangesetStateName): BerthError {
  return failedPrecondition("INVALID_TRANSITION", `changeset ${changesetId} cannot move from ${from.toUpperCase()} to ${to.toUpperCase()}`, {
    changeset_id: changesetId,
    from_state: from.toUpperCase(),
    to_state: to.toUpperCase(),
  });
}

/** A changeset row as the domain holds it (the commit columns when the row was read with them; version -1 when without it). */
export function changesetFromRow(
  row: Pick<sqlRepo.ChangesetRow, "id" | "repo_id" | "state" | "reason" | "created_at" | "updated_at"> & {
    readonly version?: sqlRepo.ChangesetRow["version"];
    readonly commit_id?: string | null;
    readonly committed_at?: Date | null;
  },
): Changeset {
  return {
    id: row.id,
    repoId: row.repo_id,
    state: row.state,
    reason: row.reason,
    createdAt: row.created_at.getTime(),
    updatedAt: row.updated_at.getTime(),
    version: row.version === undefined ? -1 : Number(toSeq(row.version)),
    ...(row.commit_id ? { commitId: row.commit_id } : {}),
    ...(row.committed_at ? { committedAt: row.committed_at.getTime() } : {}),
  };
}

/** `who` of the moves the server makes itself (an abandonment's rejection, a check's verdict). */
export const BERTH = "berth";

/** One state change of a changeset, made by a statement of the change it is recorded in. */
export interface RecordedMove {
  readonly changesetId: string;
  readonly repoId: string;
  /** changesets.version as the statement that moved it left it: the history's order. */
  readonly version: sqlRepo.ChangesetRow["version"];
  readonly from: ChangesetStateName;
  readonly to: ChangesetStateName;
  readonly reason: string;
  /** The calling agent, "anonymous" (auth off), or BERTH. */
  readonly who: string;
  readonly at: number;
}

/**
 * What every state change of a changeset does besides its own UPDATE, in the transaction that
 * made it: its history row, the move hooks (src/sessions/session-hooks.ts) and the
 * changeset.transitioned event. Every path that moves a changeset (a transition, a merge, an
 * abandonment's rejection) calls this, so none can move one without leaving its history.
 */
export async function recordMoves(change: Change, hooks: SessionHooks, moves: readonly RecordedMove[]): Promise<void> {
  if (moves.length === 0) return;
  await historyRepo.insertTransitions(
    change.trx,
    moves.map((m) => ({ changeset_id: m.changesetId, version: m.version, from_state: m.from, to_state: m.to, reason: m.reason, who: m.who, at: new Date(m.at) })),
  );
  for (const m of moves) await hooks.changesetMoved(change, { changesetId: m.changesetId, to: m.to, at: m.at });
  change.record(
    ...moves.map((m) => ({
      kind: "changeset.transitioned",
      repoId: m.repoId,
      changesetId: m.changesetId,
      occurredAt: m.at,
      reason: m.reason,
      payload: { case: "changesetTransitioned" as const, value: { fromState: changesetStateEnum(m.from), toState: changesetStateEnum(m.to) } },
    })),
  );
}

/** What a transition may be told besides its target (TransitionChangeset's `expected_state`; landing's merge). */
export interface MoveOptions {
  /** Who moves it, for its history: the calling agent, "anonymous" (auth off); BERTH when absent. */
  readonly who?: string;
  /** Runs inside the transition's transaction, after the compare-and-set (the merge moves its ref here). */
  readonly during?: (change: Change) => Promise<void>;
  /**
   * Runs first inside the transaction, once the compare-and-set holds the changeset row: the
   * caller's own rule checked again on what that lock holds still (a session joining the
   * changeset takes the row FOR SHARE, so it joined before this or waits for the commit).
   */
  readonly guard?: (change: Change) => Promise<void>;
  /** Only from this state; already in the target: answered unchanged. */
  readonly expected?: ChangesetStateName;
}

/** STATE_MISMATCH: the changeset is not in the state the caller's compare-and-set named. */
/** NOT_FOUND CHANGESET_NOT_FOUND: the one wording of a changeset id nobody has. */
export function changesetNotFound(changesetId: string): BerthError {
  return notFound("CHANGESET_NOT_FOUND", `changeset ${changesetId} does not exist`, { changeset_id: changesetId });
}

export function stateMismatch(changesetId: string, expected: ChangesetStateName, actual: ChangesetStateName): BerthError {
  return failedPrecondition("STATE_MISMATCH", `changeset ${changesetId} is ${actual.toUpperCase()}, not ${expected.toUpperCase()} as expected`, {
    changeset_id: changesetId,
    expected_state: expected.toUpperCase(),
    actual_state: actual.toUpperCase(),
  });
}
