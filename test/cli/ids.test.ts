/**
 * Short ids on the berth command line (issue 27): a session, turn or changeset id given by its
 * first characters, in arguments and options, resolved by the server (ResolveIdPrefix); an
 * ambiguous or unknown prefix is a usage error (exit 2; `berth run`: 125) listing the ids it could
 * mean. The real binary against a real server; under BERTH_TEST_INSTANCES=2 each berth process
 * talks to the next instance, so an id is resolved on another instance than the one that made it.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBerth, type TestBerth } from "../support/berth.js";
import { berth, gitFixture } from "./helpers.js";

let server: TestBerth;
let url: string;
const run = (...args: string[]) => berth([...args, "--server", url]);
/** The one line a `-q` command prints. */
async function quiet(...args: string[]): Promise<string> {
  const r = await run(...args, "-q");
  expect(r.code, r.stderr).toBe(0);
  expect(r.stdout).toMatch(/^[0-9a-f-]{36}\n$/);
  return r.stdout.trim();
}
const short = (id: string) => id.slice(0, 8);
/** A session id of one's choosing: `prefix` (8 hex digits) and a number. */
const sessionIdWith = (prefix: string, n: number) => `${prefix}-0000-4000-8000-${String(n).padStart(12, "0")}`;

let repo: string;
beforeAll(async () => {
  server = await startBerth({ env: { BERTH_ENV_ROOT: mkdtempSync(path.join(tmpdir(), "berth-cli-ids-envs-")) } });
  url = server.server.httpUrl;
  repo = `ids-${process.pid}`;
  const added = await run("repos", "add", repo, "--source", gitFixture());
  expect(added.code, added.stderr).toBe(0);
});
afterAll(async () => {
  await server?.close();
});

describe("berth with short ids", { timeout: 180_000 }, () => {
  it("takes a session, a turn and a changeset by their first 8 characters, as arguments and as options", async () => {
    const session = await quiet("workspace", "create", "--repo", repo, "--agent", "claude-7", "--mode", "persistent", "--intent", "short ids");
    const shown = await run("sessions", "show", short(session));
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(new RegExp(`^session\\s+${session}$`, "m"));
    const changeset = /^changeset\s+([0-9a-f-]{36}) /m.exec(shown.stdout)![1]!;

    const local = path.join(mkdtempSync(path.join(tmpdir(), "berth-cli-ids-")), "hello.txt");
    writeFileSync(local, "hello\n");
    expect((await run("file", "write", short(session), "hello.txt", local)).code).toBe(0);
    const cat = await run("file", "cat", session.slice(0, 13), "hello.txt"); // with a dash: the same id
    expect(cat.stdout).toBe("hello\n");

    const turn = await quiet("turn", "begin", short(session));
    const listed = await run("turn", "ls", "--session", short(session));
    expect(listed.stdout).toMatch(new RegExp(`^${turn}\\s+${session}\\s+RUNNING`, "m"));
    const ended = await run("turn", "end", short(turn));
    expect(ended.code, ended.stderr).toBe(0);
    expect(ended.stdout).toMatch(new RegExp(`^turn\\s+${turn}$`, "m"));

    const stat = await run("diff", "--changeset", short(changeset), "--stat");
    expect(stat.stdout).toMatch(/^\+1 -0\thello\.txt$/m);
    const who = await run("who-touched", "hello.txt", "--repo", repo, "--session", short(session));
    expect(who.stdout).toMatch(/nobody else touched hello\.txt/);

    // Joining the changeset by its short id: the second session is on the same changeset.
    const joined = await quiet("workspace", "create", "--repo", repo, "--agent", "claude-7", "--mode", "persistent", "--changeset", short(changeset));
    expect((await run("workspace", "show", short(joined))).stdout).toMatch(new RegExp(`^changeset\\s+${changeset} DRAFT$`, "m"));

    const moved = await run("changeset", "transition", short(changeset), "submitted");
    expect(moved.code, moved.stderr).toBe(0);
    expect(moved.stdout).toMatch(new RegExp(`^changeset\\s+${changeset}$`, "m"));
    expect(moved.stdout).toMatch(/^state\s+SUBMITTED$/m);

    // berth run too: the command sees the whole session id.
    const ran = await berth(["run", "--server", url, short(session), "--no-sandbox", "--", "sh", "-c", 'printf "%s" "$BERTH_SESSION_ID"']);
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stdout).toBe(session);
  });

  it("refuses a prefix several sessions start with, exit 2, listing them; --json names them; more characters decide", async () => {
    const p = randomBytes(4).toString("hex");
    const ids = [1, 20].map((n) => sessionIdWith(p, n));
    for (const id of ids) expect((await run("workspace", "create", "--repo", repo, "--agent", "claude-7", "--mode", "persistent", "--session", id)).code).toBe(0);

    const r = await run("sessions", "show", p);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(`berth: "${p}" is ambiguous: 2 session ids start with it; give more of the id\n  ${ids[0]}\n  ${ids[1]}\n`);

    const j = await run("file", "ls", p, "--json");
    expect(j.code).toBe(2);
    expect(JSON.parse(j.stderr)).toEqual({
      code: "INVALID_ARGUMENT",
      reason: "AMBIGUOUS_ID",
      message: `"${p}" is ambiguous: 2 session ids start with it; give more of the id`,
      details: { kind: "session", prefix: p, matches: ids },
    });
    // berth run refuses with its own failure code, before any turn is begun.
    const ran = await berth(["run", "--server", url, p, "--no-sandbox", "--", "true"]);
    expect(ran.code).toBe(125);
    expect(ran.stderr).toMatch(/is ambiguous/);
    for (const id of ids) expect((await run("turn", "ls", "--session", id)).stdout).toBe("no turns\n");

    const one = await run("sessions", "show", ids[1]!.slice(0, 35));
    expect(one.code, one.stderr).toBe(0);
    expect(one.stdout).toMatch(new RegExp(`^session\\s+${ids[1]}$`, "m"));
  });

  it("says a prefix names no id, and one that is too short or malformed, as usage errors; what is no prefix goes to the server as given", async () => {
    const nothing = randomBytes(4).toString("hex");
    const none = await run("sessions", "show", nothing);
    expect(none.code).toBe(2);
    expect(none.stderr).toBe(`berth: no session id starts with "${nothing}"\n`);
    const noneJson = await run("turn", "cancel", nothing, "--json");
    expect(noneJson.code).toBe(2);
    expect(JSON.parse(noneJson.stderr)).toMatchObject({ code: "INVALID_ARGUMENT", reason: "NO_MATCHING_ID", details: { kind: "turn", prefix: nothing, matches: [] } });

    const tooShort = await run("sessions", "show", "5e2");
    expect(tooShort.code).toBe(2);
    expect(tooShort.stderr).toMatch(/^berth: session id "5e2": at least 4 hex digits/);
    const misplaced = await run("changeset", "transition", "5e2b1c9a4", "submitted");
    expect(misplaced.code).toBe(2);
    expect(misplaced.stderr).toMatch(/^berth: changeset id "5e2b1c9a4": must be the start of a UUID/);

    const notAnId = await run("sessions", "show", "not-an-id");
    expect(notAnId.code).toBe(1);
    expect(notAnId.stderr).toMatch(/^berth: INVALID_ARGUMENT INVALID_ARGUMENT: invalid session_id/);
  });
});
