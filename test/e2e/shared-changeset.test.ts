/**
 * A changeset shared by several sessions (issue 13): joined only by an agent already on it (or an
 * admin), and not REJECTED by the abandon of one of its sessions while another is still live.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { ChangesetState, LifecycleState, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { createGrpcClient } from "../support/grpc-client.js";
import { failure } from "../support/rpc-error.js";

const sha = (t: string) => createHash("sha256").update(t).digest("hex");
const TOKENS = { alice: randomBytes(16).toString("hex"), bob: randomBytes(16).toString("hex"), ops: randomBytes(16).toString("hex"), dave: randomBytes(16).toString("hex") };

describe("a shared changeset", () => {
  let berth: TestBerth;
  const as = (who: keyof typeof TOKENS) => createGrpcClient(WorkspaceService, berth.server.grpcAddress, { metadata: { authorization: `Bearer ${TOKENS[who]}` } });
  let repoId: string;

  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "berth-shared-cs-"));
    const file = path.join(dir, "tokens.json");
    writeFileSync(file, JSON.stringify({
      tokens: [
        { sha256: sha(TOKENS.alice), agent_id: "alice", repos: ["shared"] },
        { sha256: sha(TOKENS.bob), agent_id: "bob", repos: ["shared"] },
        { sha256: sha(TOKENS.ops), agent_id: "ops", roles: ["agent", "admin"] },
        // An entry from before grants: no repos.
        { sha256: sha(TOKENS.dave), agent_id: "dave" },
      ],
    }));
    berth = await startBerth({ env: { BERTH_AUTH: "token", BERTH_AUTH_TOKENS_FILE: file } });
    repoId = (await as("ops").registerRepository({ name: "shared" })).repository!.id;
  });
  afterAll(async () => {
    await berth?.close();
  });

  it("names the token entries without repos at start, and refuses them every repository with a clear error", async () => {
    expect(berth.logs.filter((l) => l.level === 40 && typeof l.msg === "string" && l.msg.includes("without \"repos\"")).map((l) => l.msg)).toEqual([
      expect.stringContaining('agent_id "dave"'),
    ]);
    const refused = await failure(create("dave"));
    expect(refused).toMatchObject({ code: "PERMISSION_DENIED", reason: "REPOSITORY_NOT_GRANTED", metadata: { repo_id: repoId, agent_id: "dave" } });
    expect(refused.message).toMatch(/grants no repository/);
    expect((await as("dave").listRepositories({})).repositories).toEqual([]);
  });

  const create = (who: keyof typeof TOKENS, changesetId?: string) =>
    as(who).createWorkspace({ repoId, baseCommit: "main", mode: WorkspaceMode.PERSISTENT, ...(changesetId ? { changesetId } : {}) }).then((r) => r.workspace!);

  it("is joined by an agent already on it or an admin; bob joining alice's is refused, and her changeset is untouched", async () => {
    const first = await create("alice");
    const second = await create("alice", first.changesetId);
    expect(second.changesetId).toBe(first.changesetId);
    expect(await failure(create("bob", first.changesetId))).toMatchObject({
      code: "PERMISSION_DENIED",
      reason: "CHANGESET_NOT_JOINABLE",
      metadata: { changeset_id: first.changesetId, agent_id: "bob" },
    });
    // A changeset id that names nothing is refused the same way: an outsider learns nothing from it.
    const unknown = "00000000-0000-4000-8000-000000000000";
    expect(await failure(create("bob", unknown))).toMatchObject({ code: "PERMISSION_DENIED", reason: "CHANGESET_NOT_JOINABLE" });
    // An admin may put a session of anyone's on it (audited).
    const byOps = await as("ops").createWorkspace({ repoId, baseCommit: "main", mode: WorkspaceMode.PERSISTENT, changesetId: first.changesetId, agentId: "bob" });
    expect(byOps.workspace?.changesetId).toBe(first.changesetId);
    expect(berth.logs.some((l) => l.msg === "audit" && l.audit === "admin_action" && (l.target as Record<string, string>).changeset_id === first.changesetId)).toBe(true);
    // bob now has a session on it (given by the admin): he is on the changeset and may join it himself.
    expect((await create("bob", first.changesetId)).changesetId).toBe(first.changesetId);
  });

  it("stays as it is when one of its sessions is abandoned while another is live; the last abandon rejects it", async () => {
    const alice = as("alice");
    const first = await create("alice");
    const second = await create("alice", first.changesetId);
    const abandoned = (await alice.abandonSession({ sessionId: first.sessionId, reason: "done with this one" })).workspace!;
    expect(abandoned.lifecycleState).toBe(LifecycleState.ABANDONED);
    expect(abandoned.changesetState).toBe(ChangesetState.DRAFT);
    expect((await alice.getWorkspace({ sessionId: second.sessionId })).workspace?.changesetState).toBe(ChangesetState.DRAFT);
    // A stranded session is live too: it may be resumed onto the changeset.
    await alice.strandSession({ sessionId: second.sessionId });
    const third = await create("alice", first.changesetId);
    expect((await alice.abandonSession({ sessionId: third.sessionId })).workspace?.changesetState).toBe(ChangesetState.DRAFT);
    const last = (await alice.abandonSession({ sessionId: second.sessionId })).workspace!;
    expect(last.changesetState).toBe(ChangesetState.REJECTED);
  });

  it("is rejected once when its last two live sessions are abandoned at the same time", async () => {
    const alice = as("alice");
    for (let round = 0; round < 5; round++) {
      const a = await create("alice");
      const b = await create("alice", a.changesetId);
      await Promise.all([alice.abandonSession({ sessionId: a.sessionId }), alice.abandonSession({ sessionId: b.sessionId })]);
      expect((await alice.getWorkspace({ sessionId: a.sessionId })).workspace?.changesetState).toBe(ChangesetState.REJECTED);
    }
  });
});
