/**
 * Creating a workspace is the one write path with its own rules (reserved agent-N names, the
 * TTL of persistent workspaces only, the base commit resolved with git) and two SQL shapes (the
 * common case of a new DRAFT changeset group-committed: concurrent creates share their
 * statements; a transaction when the workspace joins an existing changeset); it is kept out of
 * the registry, which only admits the result.
 */
import { isTerminal } from "./changeset-states.js";
import type { Clock } from "../platform/clock.js";
import { BerthError, failedPrecondition, invalidArgument, notFound } from "../platform/errors.js";
import type { Repository, Workspace } from "./workspace.js";
import type { EventInput } from "../platform/outbox.js";
import type { UnitOfWork } from "../platform/unit-of-work.js";
import { modeEnum } from "../platform/proto-enums.js";
import type { ModeName } from "../platform/schema.js";
import { RepositoryLocations } from "../repository/locations.js";
import * as sqlRepo from "./registry.repository.js";
import type { Changesets } from "./changesets.js";
import { repositoryNotFound } from "./repositories.js";
import { GroupCommit } from "../platform/group-commit.js";

export interface CreateWorkspaceInput {
  readonly repoId: string;
  readonly intent: string;
  readonly baseCommit: string;
  readonly mode: ModeName;
  readonly ttlSeconds: number | undefined;
  readonly agentId: string;
  readonly agentName: string | undefined;
  readonly sessionId: string | undefined;
  readonly changesetId: string | undefined;
  /** CreateWorkspace's `request_id` ("" = none): a retry with it answers the workspace it made. */
  readonly requestId?: string;
}

export const DEFAULT_PERSISTENT_TTL_SECONDS = 86_400;
const AUTO_AGENT_NAME = /^agent-\d+$/;

export interface CreationDeps {
  readonly uow: UnitOfWork;
  readonly clock: Clock;
  readonly newId: () => string;
  readonly instanceId: string | undefined;
  readonly changesets: Changesets;
  readonly drafts: DraftCreates;
  /** Where the repository's commits are resolved (its source path, or this instance's mirror of its server). */
  readonly locations: RepositoryLocations;
}

/** One common create (a new DRAFT changeset) waiting for its batch. */
export interface DraftCreateInput {
  /** agent_name "" asks Berth for the next agent-N of the repository; any other is the caller's. */
  readonly row: sqlRepo.NewWorkspaceRow;
  /** Its session.created, once it has a name. */
  readonly event: (agentName: string) => EventInput;
}

/** The group commit of common creates: each answers its agent name, or undefined when its repository does not exist. */
export type DraftCreates = GroupCommit<DraftCreateInput, string | undefined>;

/**
 * The batch size and flushes in flight of common creates: a batch costs two round trips and one
 * WAL flush whatever its size, and batches in flight overlap (the numbers of one are taken while
 * another inserts).
 */
const DRAFT_BATCH = { maxBatch: 64, maxInFlight: 4 } as const;

export function draftCreates(uow: UnitOfWork): DraftCreates {
  const commit: DraftCreates = new GroupCommit((items) => flushDrafts(uow, items, () => commit.flushesInFlight === 1), DRAFT_BATCH);
  return commit;
}

/**
 * Writes a batch: the agent numbers of its Berth-named creates first (one short statement per
 * batch, registry.repository.ts takeAgentNumbers; none when every create brought its own name),
 * then every row in one statement. A batch flushed alone numbers its events in
 * that statement (no sequencer pass on its path: a lone create's event reaches the hub at once);
 * while other batches are in flight it leaves them to the sequencer, because numbering holds the
 * outbox head's lock through the commit, and batches that wait for each other's WAL flush instead
 * of sharing one lost 7–12 % of creates/s (bench/NOTES.md, create-workspace). Within a repository, names follow the
 * batch's order. When the insert fails (a taken session id), nothing of it was committed and its
 * numbers stay taken: each create then runs alone, so only the one at fault fails, and the
 * others get new numbers (docs/decisions.md: the gaps this leaves).
 */
async function flushDrafts(uow: UnitOfWork, items: readonly DraftCreateInput[], alone: () => boolean): Promise<PromiseSettledResult<string | undefined>[]> {
  const counts = new Map<string, number>();
  for (const it of items) if (it.row.agent_name === "") counts.set(it.row.repo_id, (counts.get(it.row.repo_id) ?? 0) + 1);
  try {
    const before = counts.size === 0 ? new Map<string, number>() : await uow.statement([], (db) => sqlRepo.takeAgentNumbers(db, counts));
    if (before === undefined) {
      if (items.length === 1) return [{ status: "fulfilled", value: undefined }];
    } else {
      const rows = items.map((it) => {
        if (it.row.agent_name !== "") return it.row;
        const n = before.get(it.row.repo_id)! + 1;
        before.set(it.row.repo_id, n);
        return { ...it.row, agent_name: `agent-${n}` };
      });
      await uow.numberingStatement(
        items.map((it, i) => it.event(rows[i]!.agent_name)),
        (db, events, notify) => sqlRepo.insertDraftWorkspaces(db, rows.map((row, i) => ({ row, event: events[i]! })), notify, alone()),
        (head) => head,
      );
      return rows.map((r) => ({ status: "fulfilled", value: r.agent_name }));
    }
  } catch (err) {
    if (items.length === 1) {
      // A caller-named create took no number, so nothing looked its repository up: a missing one fails the insert's foreign key.
      if (sqlRepo.isForeignKeyViolation(err)) return [{ status: "fulfilled", value: undefined }];
      return [{ status: "rejected", reason: err }];
    }
  }
  // A repository of the batch does not exist, or one create failed the insert: each alone.
  // Run side by side, these creates leave numbering to the pass (they would wait for each other's flush).
  return Promise.all(items.map(async (it) => (await flushDrafts(uow, [it], () => false))[0]!));
}

/** Writes a new workspace of `repo` (with its changeset and session.created) and returns it; the caller admits it. */
export async function makeWorkspace(deps: CreationDeps, repo: Repository, input: CreateWorkspaceInput): Promise<Workspace> {
  if (input.agentName !== undefined && AUTO_AGENT_NAME.test(input.agentName)) {
    throw invalidArgument([{ field: "agent_name", reason: "RESERVED_NAME", description: "names of the form agent-N are assigned by Berth; leave agent_name empty to get one" }]);
  }
  if (input.mode === "ephemeral" && input.ttlSeconds !== undefined) {
    throw invalidArgument([{ field: "ttl_seconds", reason: "PERSISTENT_ONLY", description: "only persistent workspaces have a TTL" }]);
  }
  let baseCommit = input.baseCommit;
  // On a git server, a branch name means the server's branch now (the mirror fetched first).
  if (RepositoryLocations.hasGit(repo)) baseCommit = await deps.locations.resolve(repo, baseCommit || "HEAD");
  else if (!baseCommit) {
    throw invalidArgument([{ field: "base_commit", reason: "REQUIRED", description: "required: the repository has no source_path or remote_url to take HEAD from" }]);
  }

  const now = deps.clock.now();
  const row: sqlRepo.NewWorkspaceRow = {
    id: deps.newId(),
    session_id: input.sessionId ?? deps.newId(),
    repo_id: repo.id,
    agent_id: input.agentId,
    agent_name: input.agentName ?? "",
    changeset_id: input.changesetId ?? deps.newId(),
    intent: input.intent,
    base_commit: baseCommit,
    mode: input.mode,
    expires_at: input.mode === "persistent" ? new Date(now + (input.ttlSeconds ?? DEFAULT_PERSISTENT_TTL_SECONDS) * 1000) : null,
    created_at: new Date(now),
    last_active_at: new Date(now),
    owner_instance: deps.instanceId ?? null,
    create_request_id: input.requestId ? input.requestId : null,
  };
  const created = (agentName: string): EventInput => ({
      kind: "session.created",
      repoId: repo.id,
      sessionId: row.session_id,
      workspaceId: row.id,
      agentId: row.agent_id,
      changesetId: row.changeset_id,
      occurredAt: now,
      payload: { case: "sessionCreated", value: { agentName, mode: modeEnum(input.mode), intent: input.intent, baseCommit } },
  });
  const draft = (): sqlRepo.ChangesetRow => ({ id: row.changeset_id, repo_id: repo.id, state: "draft", reason: "", created_at: row.created_at, updated_at: row.created_at, version: 0 });

  let result: { changeset: sqlRepo.ChangesetRow; agentName: string };
  try {
    const changesetId = input.changesetId;
    if (changesetId === undefined) {
      // The common case, a new DRAFT changeset: group-committed (flushDrafts above).
      const agentName = await deps.drafts.submit({ row, event: created });
      if (agentName === undefined) throw repositoryNotFound(repo.id);
      result = { changeset: draft(), agentName };
    } else {
      result = await deps.uow.run(async ({ trx, record }) => {
        // Joining a changeset that exists (a new one is the group-committed case above).
        const changeset = await sqlRepo.findChangeset(trx, changesetId, "share");
        if (!changeset || changeset.repo_id !== repo.id) {
          throw notFound("CHANGESET_NOT_FOUND", `changeset ${changesetId} does not exist in repository ${repo.id}`, { changeset_id: changesetId });
        }
        if (isTerminal(changeset.state)) {
          throw failedPrecondition("CHANGESET_TERMINAL", `changeset ${changeset.id} is ${changeset.state.toUpperCase()}`, { changeset_id: changeset.id, state: changeset.state.toUpperCase() });
        }
        let agentName = input.agentName;
        if (agentName === undefined) {
          const n = await sqlRepo.takeAgentNumber(trx, repo.id);
          if (n === undefined) throw repositoryNotFound(repo.id);
          agentName = `agent-${n}`;
        }
        await sqlRepo.insertWorkspace(trx, { ...row, agent_name: agentName });
        record(created(agentName));
        return { changeset, agentName };
      });
    }
  } catch (err) {
    if (sqlRepo.isUniqueViolation(err)) {
      throw new BerthError("already_exists", "SESSION_EXISTS", `session ${row.session_id} already has a workspace`, { session_id: row.session_id });
    }
    throw err;
  }

  const ws: Workspace = {
    workspaceId: row.id,
    sessionId: row.session_id,
    repoId: repo.id,
    agentId: row.agent_id,
    agentName: result.agentName,
    changeset: deps.changesets.internChangeset(result.changeset),
    intent: row.intent,
    baseCommit,
    mode: row.mode,
    expiresAt: row.expires_at?.getTime() ?? null,
    createdAt: now,
    lastActiveAt: now,
    lifecycle: "active",
    lifecycleReason: "",
    strandedAt: null,
    resumedFrom: null,
  };
  return ws;
}
