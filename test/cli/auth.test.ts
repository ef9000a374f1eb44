/** The berth command against a token-auth server: the bearer token comes from BERTH_TOKEN only. */
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { berth } from "./helpers.js";

const sha = (t: string) => createHash("sha256").update(t).digest("hex");
const ALICE = randomBytes(16).toString("hex");
const OPS = randomBytes(16).toString("hex");

describe("berth with BERTH_TOKEN", { timeout: 120_000 }, () => {
  let b: TestBerth;
  beforeAll(async () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), "berth-cli-auth-")), "tokens.json");
    writeFileSync(file, JSON.stringify({
      tokens: [
        { sha256: sha(ALICE), agent_id: "alice", roles: ["agent"], repos: ["*"] },
        { sha256: sha(OPS), agent_id: "ops", roles: ["agent", "admin"] },
      ],
    }));
    b = await startBerth({ env: { BERTH_AUTH: "token", BERTH_AUTH_TOKENS_FILE: file } });
  });
  afterAll(async () => {
    await b?.close();
  });

  it("sends the token as a bearer token, and the server's identity rules apply", async () => {
    const env = { BERTH_SERVER: b.server.httpUrl };
    const [missing, wrong] = await Promise.all([berth(["repos", "ls"], env), berth(["repos", "ls"], { ...env, BERTH_TOKEN: "not-a-token" })]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^berth: UNAUTHENTICATED TOKEN_MISSING: /m);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/^berth: UNAUTHENTICATED TOKEN_INVALID: /m);

    const added = await berth(["repos", "add", "cli-authed", "--json"], { ...env, BERTH_TOKEN: ALICE });
    expect(added.code).toBe(0);
    const repoId = (JSON.parse(added.stdout) as { repository: { id: string } }).repository.id;

    // The session belongs to alice (the token's agent); the CLI acts as her.
    const { workspace } = await b.connect.createWorkspace(
      { repoId, baseCommit: "main", mode: WorkspaceMode.PERSISTENT },
      { headers: { authorization: `Bearer ${ALICE}` } },
    );
    expect(workspace?.agentId).toBe("alice");
    const [shown, adminAsAlice] = await Promise.all([
      berth(["sessions", "show", workspace!.sessionId], { ...env, BERTH_TOKEN: ALICE }),
      berth(["sessions", "abandon", workspace!.sessionId, "--admin", "--json"], { ...env, BERTH_TOKEN: ALICE }),
    ]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/^agent\s+agent-1 \(alice\)$/m);
    // --admin needs the admin role: alice's token has not got it.
    expect(adminAsAlice.code).toBe(1);
    // --json: the refusal is one JSON line too.
    expect(JSON.parse(adminAsAlice.stderr)).toMatchObject({ code: "PERMISSION_DENIED", reason: "ROLE_REQUIRED" });

    const asOps = await berth(["sessions", "abandon", workspace!.sessionId, "--admin", "--json"], { ...env, BERTH_TOKEN: OPS });
    expect(asOps.code).toBe(0);
    expect(JSON.parse(asOps.stdout)).toMatchObject({ workspace: { lifecycleState: "LIFECYCLE_STATE_ABANDONED" } });
  });
});
