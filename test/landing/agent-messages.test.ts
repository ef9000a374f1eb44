/**
 * The default commit message (docs/landing-work.md, "The commit message"): a changeset committed
 * with no message says the intents of its sessions, then the messages of the commits their agents
 * made in their environments (kept by EndTurn), in turn order, each once; an explicit message
 * still wins; the commit MERGED makes when there is none yet says the same. Through the real
 * server, with the agents' commits made by real git in the turns' environments.
 */
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TurnService } from "../../gen/berth/v1/turn_service_pb.js";
import { ChangesetState, TurnOutcome } from "../../gen/berth/v1/types_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { createGrpcClient } from "../support/grpc-client.js";
import { approve, gitRepo, registered } from "./helpers.js";

let berth: TestBerth;
let turns: ReturnType<typeof createGrpcClient<typeof TurnService>>;

beforeAll(async () => {
  berth = await startBerth();
  turns = createGrpcClient(TurnService, berth.server.grpcAddress);
});
afterAll(async () => {
  turns?.close();
  await berth?.close();
});

let edits = 0;

/** One turn of the session in which the agent writes `file` and commits each of `messages`. */
async function agentTurn(sessionId: string, file: string, messages: readonly string[]): Promise<void> {
  const { turnId, environmentPath: env } = await turns.beginTurn({ sessionId });
  const git = (...args: string[]) => execFileSync("git", ["-C", env, "-c", "user.name=agent", "-c", "user.email=agent@example.com", ...args], { stdio: "pipe" });
  messages.forEach((m, i) => {
    writeFileSync(path.join(env, file), `${file} ${++edits} ${i} ${m}\n`);
    git("add", "-A");
    git("commit", "-q", "-m", m);
  });
  await turns.endTurn({ turnId, outcome: TurnOutcome.COMPLETED, exitCode: 0 });
}

describe("the default commit message", () => {
  it("is the intent, then the agents' own commit messages in turn order, each once; an explicit message still wins", async () => {
    const repo = gitRepo();
    const { open } = await registered(berth.grpc, repo, "agent-messages");
    const first = await open("agent-a", { intent: "Fix the notes" });
    const second = await open("agent-a", { changesetId: first.changesetId, intent: "Fix the notes" });
    await agentTurn(first.sessionId, "notes-a.txt", ["notes: read line two"]);
    // The second session's agent repeats the intent (said once) …
    await agentTurn(second.sessionId, "notes-b.txt", ["notes: fix line two", "Fix the notes"]);
    // … and the first's commits again what it said before (said once) and something new.
    await agentTurn(first.sessionId, "notes-a.txt", ["notes: read line two", "notes: tidy"]);

    const r = await berth.grpc.commitChangeset({ changesetId: first.changesetId });
    expect(repo.git("log", "-1", "--format=%B", r.commitId)).toBe("Fix the notes\n\nnotes: read line two\n\nnotes: fix line two\n\nnotes: tidy");
    const explicit = await berth.grpc.commitChangeset({ changesetId: first.changesetId, message: "Notes: line two" });
    expect(repo.git("log", "-1", "--format=%B", explicit.commitId)).toBe("Notes: line two");
  });

  it("is what the commit MERGED makes says when the changeset has none yet", async () => {
    const repo = gitRepo();
    const { open } = await registered(berth.grpc, repo, "agent-messages-merged");
    const ws = await open("agent-a", { intent: "Fix the parser" });
    await agentTurn(ws.sessionId, "parser.txt", ["fix parser"]);
    await approve(berth.grpc, ws.changesetId);
    const merged = await berth.grpc.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED });
    expect(repo.git("log", "-1", "--format=%B", merged.merge!.changesetCommitId)).toBe("Fix the parser\n\nfix parser");
    expect(repo.git("log", "-1", "--format=%s", "main")).toBe("Fix the parser");
  });

  it("without intents or kept messages is the changeset's name, as before", async () => {
    const repo = gitRepo();
    const { open } = await registered(berth.grpc, repo, "agent-messages-none");
    const ws = await open("agent-a");
    const { turnId, environmentPath } = await turns.beginTurn({ sessionId: ws.sessionId });
    writeFileSync(path.join(environmentPath, "quiet.txt"), "no commit\n");
    await turns.endTurn({ turnId, outcome: TurnOutcome.COMPLETED });
    const r = await berth.grpc.commitChangeset({ changesetId: ws.changesetId });
    expect(repo.git("log", "-1", "--format=%B", r.commitId)).toBe(`Berth changeset ${ws.changesetId}`);
  });
});
