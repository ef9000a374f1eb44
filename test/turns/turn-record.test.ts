/**
 * What a turn records beside its outcome (docs/turns.md, "What a turn records"): how its command
 * ended, as EndTurn was told (exit_code or exit_signal; absent, not 0, when it was told nothing),
 * on the Turn and on its turn.ended / turn.parked events; and the messages of the commits the
 * agent made in its environment, read at EndTurn through the hardened git (a config that names a
 * program runs none), bounded, and only those made since the environment's last EndTurn.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TurnOutcome } from "../../gen/berth/v1/types_pb.js";
import type { Event } from "../../gen/berth/v1/event_pb.js";
import { failure } from "../support/rpc-error.js";
import { makeGitRepo, newSession, startTurnBerth, type TurnBerth } from "./helpers.js";

/** `git …` in an environment, as an agent runs it there (its own identity, its own config). */
function agentGit(env: string, ...args: string[]): string {
  return execFileSync("git", ["-C", env, "-c", "user.name=agent", "-c", "user.email=agent@example.com", ...args], { stdio: "pipe", encoding: "utf8" });
}

/** `git commit --allow-empty` with a message too long for an argument (read from stdin). */
function agentCommitLong(env: string, message: string): void {
  execFileSync("git", ["-C", env, "-c", "user.name=agent", "-c", "user.email=agent@example.com", "commit", "-q", "--allow-empty", "-F", "-"], { input: message, stdio: ["pipe", "pipe", "pipe"] });
}

describe("TurnService: what a turn records", () => {
  let b: TurnBerth;
  let source: string;
  const scratch = mkdtempSync(path.join(tmpdir(), "berth-turn-record-"));

  beforeAll(async () => {
    source = makeGitRepo(5);
    b = await startTurnBerth();
  });
  afterAll(async () => {
    await b?.close();
    rmSync(source, { recursive: true, force: true });
    rmSync(scratch, { recursive: true, force: true });
  });

  const turnsOf = async (sessionId: string) => (await b.turns.listTurns({ sessionId })).turns;

  it("names, with BeginTurn's environment, the instance whose disk holds it: its id, name and advertised address", async () => {
    const { sessionId } = await newSession(b, source);
    const begun = await b.turns.beginTurn({ sessionId });
    // Instance n's environments are under `<envRoot>.instance-n` (the first's under envRoot).
    const i = b.servers.findIndex((_, n) => begun.environmentPath.startsWith(`${n === 0 ? b.envRoot : `${b.envRoot}.instance-${n + 1}`}${path.sep}`));
    const holder = b.servers[i]!;
    expect(begun.environmentInstance).toMatchObject({ instanceId: holder.instanceId, advertiseAddress: holder.advertiseAddress });
    expect(begun.environmentInstance!.instanceName).not.toBe("");
    await b.turns.endTurn({ turnId: begun.turnId, outcome: TurnOutcome.COMPLETED });
  });

  it("records the exit code EndTurn reports with the turn (ListTurns) and on its turn.ended and turn.parked events", async () => {
    const { sessionId } = await newSession(b, source);
    const ac = new AbortController();
    const events: Event[] = [];
    const watching = (async () => {
      try {
        for await (const m of b.turns.watchTurns({ sessionId }, { signal: ac.signal })) {
          events.push(m.event!);
          if (m.event!.kind === "turn.parked") break;
        }
      } catch {
        /* cancelled */
      }
    })();
    // WatchTurns streams from now: a turn begun before it is open would not be seen.
    await new Promise((r) => setTimeout(r, 100));
    const begun = await b.turns.beginTurn({ sessionId });
    const ended = await b.turns.endTurn({ turnId: begun.turnId, outcome: TurnOutcome.COMPLETED, exitCode: 0 });
    expect(ended.turn!.exitCode).toBe(0);
    expect(ended.turn!.exitSignal).toBe("");
    await Promise.race([watching, new Promise((r) => setTimeout(r, 10_000))]);
    ac.abort();
    const [listed] = await turnsOf(sessionId);
    expect(listed!.exitCode).toBe(0);
    const carried = events.filter((e) => e.kind === "turn.ended" || e.kind === "turn.parked").map((e) => (e.payload.case === "turnChanged" ? { kind: e.kind, exitCode: e.payload.value.exitCode, exitSignal: e.payload.value.exitSignal } : undefined));
    expect(carried).toEqual([
      { kind: "turn.ended", exitCode: 0, exitSignal: "" },
      { kind: "turn.parked", exitCode: 0, exitSignal: "" },
    ]);

    const second = await b.turns.beginTurn({ sessionId });
    await b.turns.endTurn({ turnId: second.turnId, outcome: TurnOutcome.FAILED, exitCode: 3 });
    const [latest] = await turnsOf(sessionId);
    expect({ outcome: latest!.outcome, exitCode: latest!.exitCode }).toEqual({ outcome: TurnOutcome.FAILED, exitCode: 3 });
  });

  it("records the signal that killed the command, with no exit code", async () => {
    const { sessionId } = await newSession(b, source);
    const begun = await b.turns.beginTurn({ sessionId });
    await b.turns.endTurn({ turnId: begun.turnId, outcome: TurnOutcome.FAILED, exitSignal: "SIGKILL" });
    const [turn] = await turnsOf(sessionId);
    expect(turn!.exitSignal).toBe("SIGKILL");
    expect(turn!.exitCode).toBeUndefined();
  });

  it("leaves exit_code absent (not 0) and exit_signal empty when an older client's EndTurn says neither", async () => {
    const { sessionId } = await newSession(b, source);
    const begun = await b.turns.beginTurn({ sessionId });
    const ended = await b.turns.endTurn({ turnId: begun.turnId, outcome: TurnOutcome.COMPLETED });
    expect(ended.turn!.exitCode).toBeUndefined();
    const [turn] = await turnsOf(sessionId);
    expect(turn!.exitCode).toBeUndefined();
    expect(turn!.exitSignal).toBe("");
  });

  it("refuses an exit code out of range, a malformed signal, or both given, naming the field and value, and the turn keeps running", async () => {
    const { sessionId } = await newSession(b, source);
    const begun = await b.turns.beginTurn({ sessionId });
    const range = await failure(b.turns.endTurn({ turnId: begun.turnId, outcome: TurnOutcome.FAILED, exitCode: 256 }));
    expect(range.code).toBe("INVALID_ARGUMENT");
    expect(range.fields).toEqual(["exit_code"]);
    expect(range.message).toContain("got 256");
    const format = await failure(b.turns.endTurn({ turnId: begun.turnId, outcome: TurnOutcome.FAILED, exitSignal: "kill -9" }));
    expect(format.fields).toEqual(["exit_signal"]);
    expect(format.message).toContain('got "kill -9"');
    const both = await failure(b.turns.endTurn({ turnId: begun.turnId, outcome: TurnOutcome.FAILED, exitCode: 1, exitSignal: "SIGTERM" }));
    expect(both.fields).toEqual(["exit_signal"]);
    expect(both.message).toMatch(/exits with a status or is killed by a signal/);
    expect((await b.turns.turnHeartbeat({ turnId: begun.turnId })).current).toBe(true);
    const ended = await b.turns.endTurn({ turnId: begun.turnId, outcome: TurnOutcome.FAILED, exitSignal: "SIGTERM" });
    expect(ended.turn!.exitSignal).toBe("SIGTERM");
  });

  it("keeps the messages of the agent's own commits, oldest first, and in the next turn only those made since", async () => {
    const { sessionId } = await newSession(b, source);
    const first = await b.turns.beginTurn({ sessionId });
    const env = first.environmentPath;
    agentGit(env, "commit", "-q", "--allow-empty", "-m", "parse: read the header");
    agentGit(env, "commit", "-q", "--allow-empty", "-m", "fix parser\n\nThe header may be empty.");
    agentGit(env, "commit", "-q", "--allow-empty", "--allow-empty-message", "-m", "");
    const ended = await b.turns.endTurn({ turnId: first.turnId, outcome: TurnOutcome.COMPLETED });
    expect(ended.turn!.commitMessages).toEqual(["parse: read the header", "fix parser\n\nThe header may be empty."]);

    // Warm: the same directory, HEAD where the agent left it.
    const second = await b.turns.beginTurn({ sessionId });
    expect(second.environmentPath).toBe(env);
    const quiet = await b.turns.endTurn({ turnId: second.turnId, outcome: TurnOutcome.COMPLETED });
    expect(quiet.turn!.commitMessages).toEqual([]);

    const third = await b.turns.beginTurn({ sessionId });
    agentGit(third.environmentPath, "commit", "-q", "--allow-empty", "-m", "parser: tests");
    const later = await b.turns.endTurn({ turnId: third.turnId, outcome: TurnOutcome.COMPLETED });
    expect(later.turn!.commitMessages).toEqual(["parser: tests"]);
    // Read back from the database (any instance), newest turn first.
    expect((await turnsOf(sessionId)).map((t) => t.commitMessages)).toEqual([["parser: tests"], [], ["parse: read the header", "fix parser\n\nThe header may be empty."]]);
  });

  it("keeps at most 64 KiB of commit messages: a huge one shortened and marked, older ones dropped first", async () => {
    const { sessionId } = await newSession(b, source);
    const begun = await b.turns.beginTurn({ sessionId });
    const env = begun.environmentPath;
    agentGit(env, "commit", "-q", "--allow-empty", "-m", "the oldest");
    const big = "x".repeat(40 * 1024);
    agentGit(env, "commit", "-q", "--allow-empty", "-m", `older ${big}`);
    agentGit(env, "commit", "-q", "--allow-empty", "-m", `newer ${big}`);
    const ended = await b.turns.endTurn({ turnId: begun.turnId, outcome: TurnOutcome.COMPLETED });
    // Compared by head and size: a failure should not print 80 KiB of x.
    const shape = (ms: readonly string[]) => ms.map((m) => ({ head: m.slice(0, 8), bytes: Buffer.byteLength(m), cut: m.endsWith("\n[…]") }));
    expect(shape(ended.turn!.commitMessages)).toEqual(shape([`newer ${big}`]));

    const next = await b.turns.beginTurn({ sessionId });
    agentCommitLong(next.environmentPath, `huge ${"y".repeat(200 * 1024)}`);
    const huge = await b.turns.endTurn({ turnId: next.turnId, outcome: TurnOutcome.COMPLETED });
    expect(shape(huge.turn!.commitMessages)).toEqual([{ head: "huge yyy", bytes: expect.any(Number), cut: true }]);
    expect(Buffer.byteLength(huge.turn!.commitMessages[0]!)).toBeLessThanOrEqual(64 * 1024);
    expect(Buffer.byteLength(huge.turn!.commitMessages[0]!)).toBeGreaterThan(60 * 1024);
  });

  it("reads the messages with git hardened: a signature check the environment's config asks for runs no program, and the message is kept", async () => {
    const { sessionId } = await newSession(b, source);
    const begun = await b.turns.beginTurn({ sessionId });
    const env = begun.environmentPath;
    // A signed-looking commit, and a config that has `git log` check signatures with a program of the agent's.
    const head = agentGit(env, "rev-parse", "HEAD").trim();
    const tree = agentGit(env, "rev-parse", "HEAD^{tree}").trim();
    const body = [`tree ${tree}`, `parent ${head}`, "author a <a@example.com> 1700000000 +0000", "committer a <a@example.com> 1700000000 +0000", "gpgsig -----BEGIN PGP SIGNATURE-----", " ", " c2lnbmF0dXJl", " -----END PGP SIGNATURE-----", "", "signed by the agent", ""].join("\n");
    const commit = execFileSync("git", ["-C", env, "hash-object", "-t", "commit", "-w", "--stdin"], { input: body, encoding: "utf8" }).trim();
    agentGit(env, "update-ref", "HEAD", commit);
    const ran = path.join(scratch, "gpg-ran");
    const program = path.join(scratch, "fake-gpg");
    writeFileSync(program, `#!/bin/sh\ntouch ${ran}\nexit 1\n`, { mode: 0o755 });
    agentGit(env, "config", "log.showSignature", "true");
    agentGit(env, "config", "gpg.program", program);
    // The trap is real: plain git log there runs the program.
    agentGit(env, "log", "-1", "--format=%B");
    expect(existsSync(ran)).toBe(true);
    rmSync(ran);

    const ended = await b.turns.endTurn({ turnId: begun.turnId, outcome: TurnOutcome.COMPLETED });
    expect(ended.turn!.commitMessages).toEqual(["signed by the agent"]);
    expect(existsSync(ran)).toBe(false);
  });

  it("ends the turn without messages, and without waiting, when the environment's HEAD is a FIFO", async () => {
    const { sessionId } = await newSession(b, source);
    const begun = await b.turns.beginTurn({ sessionId });
    const env = begun.environmentPath;
    agentGit(env, "commit", "-q", "--allow-empty", "-m", "lost to the FIFO");
    writeFileSync(path.join(env, "kept.txt"), "kept\n");
    rmSync(path.join(env, ".git/HEAD"));
    execFileSync("mkfifo", [path.join(env, ".git/HEAD")]);
    const started = Date.now();
    const ended = await b.turns.endTurn({ turnId: begun.turnId, outcome: TurnOutcome.COMPLETED });
    expect(Date.now() - started).toBeLessThan(9_000);
    expect(ended.turn!.commitMessages).toEqual([]);
    expect(ended.capturedPaths).toEqual(["kept.txt"]);
  });
});
