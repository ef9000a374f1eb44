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
const BOB = randomBytes(16).toString("hex");

describe("berth with BERTH_TOKEN", { timeout: 120_000 }, () => {
  let b: TestBerth;
  beforeAll(async () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), "berth-cli-auth-")), "tokens.json");
    writeFileSync(file, JSON.stringify({
      tokens: [
        { sha256: sha(ALICE), agent_id: "alice", roles: ["agent"], repos: ["*"] },
        { sha256: sha(OPS), agent_id: "ops", roles: ["agent", "admin"] },
        { sha256: sha(BOB), agent_id: "bob", roles: ["agent"], repos: ["*"] },
      ],
    }));
    b = await startBerth({ env: { BERTH_AUTH: "token", BERTH_AUTH_TOKENS_FILE: file } });
  });
  afterAll(async () => {
    await b?.close();
  });

  it("berth repos set --independent-review=false is an admin's (UpdateRepository); repos ls shows the policy", async () => {
    const env = { BERTH_SERVER: b.server.httpUrl };
    const added = await berth(["repos", "add", "cli-reviewed", "--json"], { ...env, BERTH_TOKEN: ALICE });
    expect((JSON.parse(added.stdout) as { repository: { independentReview?: boolean } }).repository.independentReview).toBe(true);
    const refused = await berth(["repos", "set", "cli-reviewed", "--independent-review=false"], { ...env, BERTH_TOKEN: ALICE });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^berth: PERMISSION_DENIED ROLE_REQUIRED: /m);
    const bad = await berth(["repos", "set", "cli-reviewed", "--independent-review=maybe"], { ...env, BERTH_TOKEN: OPS });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain("--independent-review takes true or false");
    const set = await berth(["repos", "set", "cli-reviewed", "--independent-review=false", "--json"], { ...env, BERTH_TOKEN: OPS });
    expect(set.code).toBe(0);
    expect((JSON.parse(set.stdout) as { repository: { name: string; independentReview?: boolean } }).repository).toMatchObject({ name: "cli-reviewed" });
    expect((JSON.parse(set.stdout) as { repository: { independentReview?: boolean } }).repository.independentReview ?? false).toBe(false);
    const ls = await berth(["repos", "ls"], { ...env, BERTH_TOKEN: OPS });
    expect(ls.stdout).toMatch(/cli-reviewed\s+-\s+-\s/);
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

  it("resolves a short id among the caller's own sessions only: another agent's prefix names nothing", async () => {
    const env = { BERTH_SERVER: b.server.httpUrl };
    const added = await berth(["repos", "add", "cli-authed-ids", "-q"], { ...env, BERTH_TOKEN: ALICE });
    expect(added.code, added.stderr).toBe(0);
    // No --agent: the token's agent (a usage error only when nothing names one).
    const created = await berth(["workspace", "create", "--repo", added.stdout.trim(), "--mode", "persistent", "--base", "main", "-q"], { ...env, BERTH_TOKEN: ALICE });
    expect(created.code, created.stderr).toBe(0);
    const sessionId = created.stdout.trim();
    const [mine, bobs, admins] = await Promise.all([
      berth(["sessions", "show", sessionId.slice(0, 8)], { ...env, BERTH_TOKEN: ALICE }),
      berth(["sessions", "show", sessionId.slice(0, 8), "--json"], { ...env, BERTH_TOKEN: BOB }),
      berth(["sessions", "show", sessionId.slice(0, 8)], { ...env, BERTH_TOKEN: OPS }),
    ]);
    expect(mine.code, mine.stderr).toBe(0);
    expect(mine.stdout).toMatch(new RegExp(`^session\\s+${sessionId}$`, "m"));
    expect(bobs.code).toBe(2);
    expect(JSON.parse(bobs.stderr)).toMatchObject({ reason: "NO_MATCHING_ID", details: { matches: [] } });
    expect(admins.code, admins.stderr).toBe(0);
    // The whole id still reaches the server, which refuses bob as the owner check says.
    const whole = await berth(["sessions", "show", sessionId, "--json"], { ...env, BERTH_TOKEN: BOB });
    expect(JSON.parse(whole.stderr)).toMatchObject({ code: "PERMISSION_DENIED", reason: "NOT_SESSION_OWNER" });
  });
});
