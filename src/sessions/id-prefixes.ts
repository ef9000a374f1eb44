/**
 * Which session, workspace, changeset and review comment ids start with a prefix (ResolveIdPrefix: the short ids
 * the console and the berth command show). Each kind is one range scan of its id's index
 * (platform/uuid.ts uuidPrefixBounds), narrowed to one agent's ids unless the caller may act for
 * anyone: whose ids they are is decided by the caller (api/id-prefix-handler.ts), not here.
 */
import type { Db } from "../platform/database.js";
import type { UuidBounds } from "../platform/uuid.js";

export type PrefixedKind = "session" | "workspace" | "changeset" | "comment";

/** An id that matched, with the repository it belongs to (for the caller's grant check). */
export interface PrefixMatch {
  readonly id: string;
  readonly repoId: string;
}

/** What is searched: the bounds, after the last id already read (exclusive), and whose ids (undefined: anyone's). */
export interface PrefixQuery {
  readonly bounds: UuidBounds;
  readonly after: string | undefined;
  readonly agentId: string | undefined;
  readonly limit: number;
}

/** The matching ids of `kind`, ascending, at most `q.limit`. */
export async function idsWithPrefix(db: Db, kind: PrefixedKind, q: PrefixQuery): Promise<PrefixMatch[]> {
  const low = q.after ?? q.bounds.lowest;
  const lowOp = q.after === undefined ? ">=" : ">";
  switch (kind) {
    case "workspace": {
      let s = db.selectFrom("workspaces").select(["id", "repo_id"]).where("id", lowOp, low).where("id", "<=", q.bounds.highest);
      if (q.agentId !== undefined) s = s.where("agent_id", "=", q.agentId);
      return (await s.orderBy("id").limit(q.limit).execute()).map((r) => ({ id: r.id, repoId: r.repo_id }));
    }
    case "changeset": {
      // A changeset is the caller's when it has (or had) a session on it (registry agentsOfChangeset).
      const agentId = q.agentId;
      let s = db.selectFrom("changesets as c").select(["c.id", "c.repo_id"]).where("c.id", lowOp, low).where("c.id", "<=", q.bounds.highest);
      if (agentId !== undefined) {
        s = s.where(({ exists, selectFrom }) => exists(selectFrom("workspaces as w").select("w.id").whereRef("w.changeset_id", "=", "c.id").where("w.agent_id", "=", agentId)));
      }
      return (await s.orderBy("c.id").limit(q.limit).execute()).map((r) => ({ id: r.id, repoId: r.repo_id }));
    }
    case "comment": {
      // A comment is the caller's to see when its changeset is (the changeset case above).
      const agentId = q.agentId;
      let s = db.selectFrom("comments as m").select(["m.id", "m.repo_id"]).where("m.id", lowOp, low).where("m.id", "<=", q.bounds.highest);
      if (agentId !== undefined) {
        s = s.where(({ exists, selectFrom }) => exists(selectFrom("workspaces as w").select("w.id").whereRef("w.changeset_id", "=", "m.changeset_id").where("w.agent_id", "=", agentId)));
      }
      return (await s.orderBy("m.id").limit(q.limit).execute()).map((r) => ({ id: r.id, repoId: r.repo_id }));
    }
    case "session": {
      // A session's current id, and the old ids of resumed sessions (which still answer, SESSION_RESUMED).
      let current = db.selectFrom("workspaces").select(["session_id as id", "repo_id"]).where("session_id", lowOp, low).where("session_id", "<=", q.bounds.highest);
      let old = db
        .selectFrom("session_redirects as r")
        .innerJoin("workspaces as w", "w.id", "r.workspace_id")
        .select(["r.dead_session_id as id", "w.repo_id"])
        .where("r.dead_session_id", lowOp, low)
        .where("r.dead_session_id", "<=", q.bounds.highest);
      if (q.agentId !== undefined) {
        current = current.where("agent_id", "=", q.agentId);
        old = old.where("w.agent_id", "=", q.agentId);
      }
      const [a, b] = await Promise.all([current.orderBy("session_id").limit(q.limit).execute(), old.orderBy("r.dead_session_id").limit(q.limit).execute()]);
      return [...a, ...b]
        .map((r) => ({ id: r.id, repoId: r.repo_id }))
        .sort((x, y) => (x.id < y.id ? -1 : x.id > y.id ? 1 : 0))
        .slice(0, q.limit);
    }
  }
}
