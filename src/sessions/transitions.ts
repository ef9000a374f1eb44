/**
 * The explicit transitions of a session (StrandSession, ResumeSession, AbandonSession,
 * DestroyWorkspace) and the transactional steps the GC and the sweeps reuse, in one module so
 * that every path out of `active` writes its rows, runs the exit hooks and records its events the
 * same way.
 */
import { isTerminal } from "./changeset-states.js";
import { BERTH, recordMoves } from "./changesets.js";
import type { Clock } from "../platform/clock.js";
import { failedPrecondition, notFound, permissionDenied } from "../platform/errors.js";
import { assertActive, type Workspace } from "./workspace.js";
import type { EventInput } from "../platform/outbox.js";
import { changesetStateEnum } from "../platform/proto-enums.js";
import type { WorkspaceRegistry } from "./registry.js";
import * as regRepo from "./registry.repository.js";
import type { ChangesetStateName } from "../platform/schema.js";
import * as repo from "./lifecycle.repository.js";
import type { Change } from "../platform/unit-of-work.js";
import type { ExitLifecycle } from "./session-hooks.js";
import { endedEvent, eventOf, strandedEvent } from "./lifecycle-events.js";
import type { AbandonCause, LifecycleContext } from "./lifecycle-types.js";

export class Transitions {
  private readonly registry: WorkspaceRegistry;
  private readonly clock: Clock;

  constructor(ctx: LifecycleContext) {
    this.registry = ctx.registry;
    this.clock = ctx.clock;
  }

  private get db() {
    return this.registry.db;
  }

  private get uow() {
    return this.registry.uow;
  }

  /** Runs the exit hooks (claims, overlay) for the workspaces a statement of `change` ended. */
  exited(change: Change, workspaceIds: readonly string[], to: ExitLifecycle, reason: string, at: number): Promise<void> {
    return this.registry.hooks.exited(change, { workspaceIds, to, reason, at });
  }

  /**
   * Strands an active session: its work is kept for ResumeSession. Idempotent: a stranded
   * session is returned as it is (first stranded_at kept). Abandoned or destroyed: the
   * FAILED_PRECONDITION of assertActive.
   *
   * Claims (issue 5) are released in this same transaction once they exist.
   */
  async strand(sessionId: string, reason: string): Promise<Workspace> {
    const ws = await this.registry.getWorkspace(sessionId);
    if (ws.lifecycle === "stranded") return ws;
    assertActive(ws);
    const now = this.clock.now();
    const rows = await this.uow.run((change) => this.stranded(change, [ws.workspaceId], reason, now));
    if (rows.length === 0) {
      // Lost a race (another strand, an abandon, a destroy): report what it is now.
      this.registry.drop(sessionId);
      const current = await this.registry.getWorkspace(sessionId);
      if (current.lifecycle === "stranded") return current;
      assertActive(current);
      return current;
    }
    this.markStranded(ws, now, reason);
    return ws;
  }

  /**
   * Active → stranded for the given workspaces, in `change`: claims are released (issue 3 defect
   * 5, by the exit hooks); the overlay rows stay for the resume. The rows that changed.
   */
  async stranded(change: Change, workspaceIds: readonly string[], reason: string, now: number, inactiveBefore?: number): Promise<repo.LifecycleRow[]> {
    const rows = await repo.strandWorkspaces(change.trx, workspaceIds, reason, new Date(now), inactiveBefore === undefined ? undefined : new Date(inactiveBefore));
    await this.exited(change, rows.map((r) => r.id), "stranded", reason, now);
    change.record(...rows.map((r) => strandedEvent(r, now, reason)));
    return rows;
  }

  /** Active → destroyed, in `change`: claims and overlay go with it (exit hooks). The rows that changed. */
  async destroyed(change: Change, workspaceIds: readonly string[], cause: string, kind: "session.destroyed" | "session.expired", now: number, inactiveBefore?: number): Promise<repo.LifecycleRow[]> {
    const rows = await repo.destroyWorkspaces(change.trx, workspaceIds, cause, new Date(now), inactiveBefore === undefined ? undefined : new Date(inactiveBefore));
    await this.exited(change, rows.map((r) => r.id), "destroyed", cause, now);
    change.record(...rows.map((r) => endedEvent(r, kind, now, cause)));
    return rows;
  }

  /**
   * DestroyWorkspace: an active session's workspace ends for good. Idempotent: a destroyed
   * session is returned as it is; stranded or abandoned: the FAILED_PRECONDITION of assertActive.
   */
  async destroy(sessionId: string, cause: string): Promise<Workspace> {
    const ws = await this.registry.getWorkspace(sessionId);
    if (ws.lifecycle === "destroyed") return ws;
    assertActive(ws);
    const now = this.clock.now();
    const rows = await this.uow.run((change) => this.destroyed(change, [ws.workspaceId], cause, "session.destroyed", now));
    if (rows.length === 0) {
      // Lost a race (a strand, an abandon, another destroy): report what it is now.
      this.registry.drop(sessionId);
      const current = await this.registry.getWorkspace(sessionId);
      if (current.lifecycle === "destroyed") return current;
      assertActive(current);
      return current;
    }
    this.markDestroyed(ws, cause);
    return ws;
  }

  markDestroyed(ws: Workspace, cause: string): void {
    this.registry.drop(ws.sessionId);
    ws.lifecycle = "destroyed";
    ws.lifecycleReason = cause;
  }

  markStranded(ws: Workspace, at: number, reason: string): void {
    this.registry.drop(ws.sessionId);
    ws.lifecycle = "stranded";
    ws.strandedAt = at;
    ws.lifecycleReason = reason;
  }

  /**
   * Resumes a stranded session under a new session id, in one transaction: the compare-and-set
   * of repo.resumeCas, the changeset locked FOR SHARE and re-checked, the redirect dead → new
   * and the event. A loser (a retry or a racing resumer) gets ALREADY_RESUMED with the
   * winner's id in the ErrorInfo metadata (new_session_id), never a session of its own.
   * A caller that is not the session's agent gets PERMISSION_DENIED AGENT_MISMATCH before
   * anything about the session's state is revealed.
   */
  async resume(deadSessionId: string, agentId: string): Promise<Workspace> {
    const now = this.clock.now();
    const fresh = this.registry.mintId();
    const result = await this.uow.run(async ({ trx, record }) => {
        const hit = await repo.resumeCas(trx, deadSessionId, fresh, agentId, this.registry.instanceId ?? null, new Date(now));
        if (!hit) return { ok: false as const };
        const cs = await repo.lockChangesetShared(trx, hit.changeset_id);
        if (!cs || isTerminal(cs.state)) {
          // A transition to a terminal state committed between the CAS and the lock: roll back.
          throw changesetTerminal(hit.changeset_id, cs?.state ?? "closed");
        }
        await repo.insertRedirect(trx, deadSessionId, fresh, hit.id, new Date(now));
        const row = (await regRepo.findWorkspaceById(trx, hit.id))!;
        record({
          kind: "session.resumed",
          repoId: row.repo_id,
          sessionId: fresh,
          workspaceId: row.id,
          agentId,
          changesetId: row.changeset_id,
          occurredAt: now,
          payload: { case: "sessionResumed", value: { oldSessionId: deadSessionId, newSessionId: fresh } },
        });
        return { ok: true as const, row };
    });
    if (!result.ok) throw await this.resumeRefusal(deadSessionId, agentId);
    const ws = this.registry.workspaceFromRow(result.row);
    this.registry.admit(ws);
    return ws;
  }

  /** Why a resume's compare-and-set matched nothing, read after the fact. */
  private async resumeRefusal(dead: string, agentId: string): Promise<Error> {
    const redirect = await regRepo.findRedirect(this.db, dead);
    const row = await regRepo.findWorkspaceBySession(this.db, dead);
    if (!row && !redirect) return notFound("SESSION_NOT_FOUND", `session ${dead} has no workspace`, { session_id: dead });
    const owner = row?.agent_id ?? (redirect ? (await regRepo.findWorkspaceById(this.db, redirect.workspace_id))?.agent_id : undefined);
    if (owner !== undefined && owner !== agentId) {
      return permissionDenied("AGENT_MISMATCH", `session ${dead} belongs to another agent`, { session_id: dead, agent_id: agentId });
    }
    if (redirect) {
      return failedPrecondition("ALREADY_RESUMED", `session ${dead} was already resumed as ${redirect.new_session_id}`, {
        session_id: dead,
        new_session_id: redirect.new_session_id,
        workspace_id: redirect.workspace_id,
      });
    }
    const ws = this.registry.workspaceFromRow(row!);
    if (ws.lifecycle === "stranded") {
      // Stranded and the agent matches: only a terminal changeset stops it.
      return changesetTerminal(ws.changeset.id, ws.changeset.state);
    }
    if (ws.lifecycle === "active") {
      return failedPrecondition("SESSION_NOT_STRANDED", `session ${dead} is active; only a stranded session can be resumed`, {
        session_id: dead,
        workspace_id: ws.workspaceId,
      });
    }
    try {
      assertActive(ws);
    } catch (err) {
      return err as Error;
    }
    return failedPrecondition("SESSION_NOT_STRANDED", `session ${dead} is not stranded`, { session_id: dead });
  }

  /**
   * Abandons an active or stranded session in one transaction: workspace tombstoned
   * (lifecycle abandoned, ended_at), changeset REJECTED with reason session_abandoned:<cause>
   * unless another live (active or stranded) session still works on it,
   * events changeset.transitioned and session.abandoned. Idempotent: an abandoned session is
   * returned as it is. Overlay rows and claims (issue 5) are deleted/released in this same
   * transaction once they exist.
   */
  async abandon(sessionId: string, cause: AbandonCause, note = "", who = BERTH): Promise<Workspace> {
    const ws = this.registry.liveWorkspace(sessionId) ?? (await this.registry.getWorkspace(sessionId));
    if (ws.lifecycle === "abandoned") return ws;
    if (ws.lifecycle === "destroyed") assertActive(ws);
    const now = this.clock.now();
    const reason = `session_abandoned:${cause}`;
    const out = await this.uow.run(async (change) => {
      const rows = await repo.abandonSession(change.trx, sessionId, reason, new Date(now));
      if (rows.length === 0) return { rows, rejected: [], states: [] };
      return this.abandoned(change, rows, reason, note, now, who);
    });
    if (out.rows.length === 0) {
      // Lost a race (resumed, destroyed, abandoned meanwhile): report what it is now.
      this.registry.drop(sessionId);
      const current = await this.registry.getWorkspace(sessionId);
      if (current.lifecycle === "abandoned") return current;
      assertActive(current);
      return current;
    }
    this.applyRejected(out.rejected, out.states);
    this.registry.drop(sessionId);
    ws.lifecycle = "abandoned";
    ws.lifecycleReason = reason;
    const row = await regRepo.findWorkspaceBySession(this.db, sessionId);
    return row ? this.registry.workspaceFromRow(row) : ws;
  }

  /**
   * What follows an abandon (explicit or by the stranded sweep), in its transaction: the exit
   * hooks (overlay rows deleted, claims released), the changesets REJECTED (their move hooks
   * run too, and their history is written: recordMoves) and the events. `who`: whoever abandoned
   * the session (BERTH for the sweeps).
   */
  async abandoned(change: Change, rows: repo.LifecycleRow[], reason: string, note: string, now: number, who = BERTH) {
    await this.exited(change, rows.map((r) => r.id), "abandoned", reason, now);
    const ids = [...new Set(rows.map((r) => r.changeset_id))];
    // A changeset shared with sessions still live stays as it is: it is theirs too (issue 13).
    const rejected = await repo.rejectChangesets(change.trx, await repo.changesetsWithoutLiveSessions(change.trx, ids), reason, new Date(now));
    await recordMoves(
      change,
      this.registry.hooks,
      rejected.map((c) => ({ changesetId: c.id, repoId: c.repo_id, version: c.version, from: c.old_state, to: "rejected" as const, reason, who, at: now })),
    );
    const done = new Set(rejected.map((c) => c.id));
    const states = await repo.changesetStates(change.trx, ids.filter((id) => !done.has(id)));
    const out = { rows, rejected, states };
    change.record(...this.abandonEvents(out, reason, note, now));
    return out;
  }

  private abandonEvents(r: { rows: repo.LifecycleRow[]; rejected: repo.RejectedChangeset[]; states: regRepo.ChangesetRow[] }, reason: string, note: string, now: number): EventInput[] {
    const previous = new Map<string, ChangesetStateName>();
    for (const c of r.states) previous.set(c.id, c.state);
    const events: EventInput[] = [];
    // Their changeset.transitioned events are recordMoves': recorded before these.
    for (const c of r.rejected) previous.set(c.id, c.old_state);
    for (const row of r.rows) {
      const prev = previous.get(row.changeset_id) ?? "rejected";
      events.push(eventOf(row, "session.abandoned", now, note ? `${reason}: ${note}` : reason, {
        case: "sessionAbandoned",
        value: { previousChangesetState: changesetStateEnum(prev) },
      }));
    }
    return events;
  }

  applyRejected(rejected: readonly regRepo.ChangesetRow[], states: readonly regRepo.ChangesetRow[]): void {
    for (const c of rejected) this.registry.refreshChangeset(c);
    for (const c of states) this.registry.refreshChangeset(c);
  }
}

function changesetTerminal(changesetId: string, state: ChangesetStateName): Error {
  return failedPrecondition("CHANGESET_TERMINAL", `changeset ${changesetId} is ${state.toUpperCase()}, a terminal state`, {
    changeset_id: changesetId,
    state: state.toUpperCase(),
  });
}
