/** Setting Berth up for a scenario through its own RPCs: a repository, then workspaces. */
import { WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import {
  CreateWorkspaceRequestSchema,
  CreateWorkspaceResponseSchema,
  GetWorkspaceRequestSchema,
  RegisterRepositoryRequestSchema,
  RegisterRepositoryResponseSchema,
} from "../../gen/berth/v1/workspace_service_pb.js";
import { frame, message } from "./bodies.js";
import { mapLimit, RpcClient } from "./rpc.js";

export const SERVICE = "/berth.v1.WorkspaceService";
export const GET_WORKSPACE = `${SERVICE}/GetWorkspace`;
export const CREATE_WORKSPACE = `${SERVICE}/CreateWorkspace`;

export async function registerRepository(client: RpcClient, name = `bench-repo-${Date.now()}`): Promise<string> {
  const r = await client.unary(`${SERVICE}/RegisterRepository`, RegisterRepositoryRequestSchema, RegisterRepositoryResponseSchema, { name });
  return r.repository!.id;
}

/** A CreateWorkspace request of a fleet agent: ephemeral, on a given commit, Berth mints the session and the agent name. */
export function createWorkspaceInit(repoId: string, i = 0) {
  return { repoId, intent: `bench: refactor module ${i}`, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: `bench-agent-${i % 64}` };
}

/** Creates n workspaces through CreateWorkspace, `concurrency` at a time; returns their session ids. */
export async function createWorkspaces(client: RpcClient, repoId: string, n: number, concurrency = 32): Promise<string[]> {
  const ids = Array.from({ length: n }, (_, i) => i);
  return mapLimit(ids, concurrency, async (i) => {
    const r = await client.unary(CREATE_WORKSPACE, CreateWorkspaceRequestSchema, CreateWorkspaceResponseSchema, createWorkspaceInit(repoId, i));
    return r.workspace!.sessionId;
  });
}

/** Berth with a repository and `n` workspaces; GetWorkspace bodies spread over their sessions. */
export async function populate(url: string, n: number): Promise<{ repoId: string; sessionIds: string[]; grpcBodies: Uint8Array[]; connectBodies: Uint8Array[] }> {
  const client = new RpcClient(url);
  try {
    const repoId = await registerRepository(client);
    const sessionIds = await createWorkspaces(client, repoId, n);
    return {
      repoId,
      sessionIds,
      grpcBodies: sessionIds.map((sessionId) => frame(GetWorkspaceRequestSchema, { sessionId })),
      connectBodies: sessionIds.map((sessionId) => message(GetWorkspaceRequestSchema, { sessionId })),
    };
  } finally {
    client.close();
  }
}

/**
 * Inserts n active workspaces of repoId straight in SQL (each with its changeset), with no
 * owner instance, in one transaction. `kind`:
 * - "draft": ephemeral, changeset DRAFT — what a crashed server leaves (startup reconcile strands them);
 * - "adoptable": persistent, changeset MERGED, expiring in a day — a restarted server adopts and loads them.
 */
export async function bulkInsertWorkspaces(url: string, repoId: string, n: number, kind: "draft" | "adoptable"): Promise<void> {
  const { default: pg } = await import("pg");
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query("BEGIN");
    await c.query("CREATE TEMP TABLE g ON COMMIT DROP AS SELECT i, gen_random_uuid() AS ws, gen_random_uuid() AS sess, gen_random_uuid() AS cs FROM generate_series(1, $1::int) i", [n]);
    await c.query("INSERT INTO changesets (id, repo_id, state, created_at, updated_at) SELECT cs, $1, $2, now(), now() FROM g", [repoId, kind === "draft" ? "draft" : "merged"]);
    await c.query(
      `INSERT INTO workspaces (id, session_id, repo_id, agent_id, agent_name, changeset_id, intent, base_commit, mode, expires_at, created_at, last_active_at)
       SELECT ws, sess, $1, 'bench-agent-' || (i % 64), 'bulk-' || i, cs, 'bench: refactor module ' || i, 'main', $2, $3::timestamptz, now(), now() FROM g`,
      [repoId, kind === "draft" ? "ephemeral" : "persistent", kind === "draft" ? null : new Date(Date.now() + 86_400_000)],
    );
    await c.query("COMMIT");
  } finally {
    await c.end();
  }
}
