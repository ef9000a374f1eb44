/**
 * Separation of duties holds against a session that joins while an approval is decided: the
 * authors are read again inside the transition's transaction, once its compare-and-set holds the
 * changeset row (api/changeset-access.ts independentReviewGuard). Before, they were read only
 * before the transaction, and an agent whose session joined in between approved its own work.
 *
 * The interleaving is made on purpose with PostgreSQL itself: a transaction of the test's holds
 * the changeset row while the approval's pre-check passes and its compare-and-set waits for the
 * row; in that transaction the approver's session joins (its workspace row written as a join
 * writes it: a real join would wait behind the approval's lock request, so it cannot be placed
 * in the window through the API), and the row is let go.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ChangesetState, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { createGrpcClient } from "../support/grpc-client.js";
import { failure } from "../support/rpc-error.js";
import { needs } from "../support/services.js";

const sha = (t: string) => createHash("sha256").update(t).digest("hex");
const TOKENS = { alice: randomBytes(16).toString("hex"), ops: randomBytes(16).toString("hex") };

needs({ postgres: true })("independent review against a session joining meanwhile", () => {
  let berth: TestBerth;
  const as = (who: keyof typeof TOKENS) => createGrpcClient(WorkspaceService, berth.server.grpcAddress, { metadata: { authorization: `Bearer ${TOKENS[who]}` } });

  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "berth-review-race-"));
    const file = path.join(dir, "tokens.json");
    writeFileSync(file, JSON.stringify({
      tokens: [
        { sha256: sha(TOKENS.alice), agent_id: "alice", roles: ["agent"], repos: ["*"] },
        { sha256: sha(TOKENS.ops), agent_id: "ops", roles: ["agent", "admin"] },
      ],
    }));
    berth = await startBerth({ kind: "postgres", env: { BERTH_AUTH: "token", BERTH_AUTH_TOKENS_FILE: file, BERTH_ENV_ROOT: path.join(dir, "envs") } });
  });
  afterAll(async () => {
    await berth?.close();
  });

  it("refuses an approval whose approver's session joined the changeset after the check and before the commit; the changeset stays VERIFYING", async () => {
    const alice = as("alice");
    const repoId = (await alice.registerRepository({ name: "review-race" })).repository!.id;
    const { workspace } = await alice.createWorkspace({ repoId, baseCommit: "main", mode: WorkspaceMode.PERSISTENT });
    const id = workspace!.changesetId;
    await alice.transitionChangeset({ changesetId: id, toState: ChangesetState.SUBMITTED });
    await alice.transitionChangeset({ changesetId: id, toState: ChangesetState.VERIFYING });

    const holder = new pg.Client({ connectionString: berth.database.url });
    const watcher = new pg.Client({ connectionString: berth.database.url });
    await Promise.all([holder.connect(), watcher.connect()]);
    try {
      await holder.query("BEGIN");
      await holder.query("SELECT 1 FROM changesets WHERE id = $1::uuid FOR UPDATE", [id]);
      // ops is an admin on no session of it: the check before the transaction lets it approve.
      const approval = failure(as("ops").transitionChangeset({ changesetId: id, toState: ChangesetState.APPROVED, reason: "mine now" }));
      const deadline = Date.now() + 30_000;
      for (;;) {
        const waiting = await watcher.query(
          "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE '%changesets%' AND pid <> $1",
          [(holder as unknown as { processID: number }).processID],
        );
        if (waiting.rowCount) break;
        if (Date.now() > deadline) throw new Error("the approval never waited for the changeset row");
        await new Promise((r) => setTimeout(r, 20));
      }
      // ops's session joins the changeset, and commits first.
      await holder.query(
        `INSERT INTO workspaces SELECT (jsonb_populate_record(w, jsonb_build_object('id', gen_random_uuid(), 'session_id', gen_random_uuid(), 'agent_id', 'ops', 'agent_name', 'ops-joined'))).*
         FROM workspaces w WHERE w.changeset_id = $1::uuid LIMIT 1`,
        [id],
      );
      await holder.query("COMMIT");
      expect(await approval).toMatchObject({ code: "PERMISSION_DENIED", reason: "INDEPENDENT_REVIEW_REQUIRED", metadata: { agent_id: "ops", to_state: "APPROVED" } });
    } finally {
      await holder.query("ROLLBACK").catch(() => {}); // committed above unless the test failed before
      await Promise.all([holder.end(), watcher.end()]);
    }
    expect((await alice.getChangeset({ changesetId: id })).changeset?.state).toBe(ChangesetState.VERIFYING);
  });
});
