/**
 * A Berth agent in TypeScript with @berth/client (clients/typescript: the generated code plus a
 * typed wrapper with retries of idempotent calls, deadlines and a resuming events() stream):
 *
 *   npx tsx examples/typescript/client.ts --server http://127.0.0.1:8080 [--protocol connect|grpc-web|grpc]
 *
 * The same flow as examples/python: register a repository, open a workspace, write a file,
 * strand the session (and show the SESSION_STRANDED error it answers), resume it, read the file
 * back, watch the repository's events from after_seq=0 until the resume, then cancel. Prints
 * each step; exits 1 on any unexpected result.
 */
import { parseArgs } from "node:util";
import { ChangesetState, Code, ConnectError, ErrorInfoSchema, LifecycleState, WorkspaceMode, createBerthClient, type Protocol } from "@berth/client";

class Unexpected extends Error {}

function expect(condition: boolean, what: string): asserts condition {
  if (!condition) throw new Unexpected(what);
}

function protocolOf(raw: string): Protocol {
  if (raw === "connect" || raw === "grpc-web" || raw === "grpc") return raw;
  throw new Unexpected(`--protocol must be connect, grpc-web or grpc, got ${raw}`);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      server: { type: "string", default: process.env["BERTH_SERVER"] ?? "http://127.0.0.1:8080" },
      protocol: { type: "string", default: "connect" },
      token: { type: "string", default: process.env["BERTH_TOKEN"] },
    },
  });
  const berth = createBerthClient({ baseUrl: values.server, protocol: protocolOf(values.protocol), ...(values.token ? { token: values.token } : {}), timeoutMs: 10_000 });
  const client = berth.workspaces;
  const agent = `ts-agent-${crypto.randomUUID().slice(0, 8)}`;

  const { repository: repo } = await client.registerRepository({ name: `ts-demo-${crypto.randomUUID().slice(0, 8)}` });
  expect(repo !== undefined, "RegisterRepository returns the repository");
  console.log(`registered repository ${repo.name} (${repo.id})`);

  const { workspace: created } = await client.createWorkspace({ repoId: repo.id, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: agent, intent: "a TypeScript example" });
  expect(created !== undefined && created.changesetState === ChangesetState.DRAFT, "the new changeset is DRAFT");
  console.log(`opened workspace ${created.workspaceId}: session ${created.sessionId}, agent name ${created.agentName}`);

  const content = new TextEncoder().encode("console.log('hello from TypeScript');\n");
  const written = await client.writeFile({ sessionId: created.sessionId, path: "hello.ts", content });
  expect(written.newHash !== "", "WriteFile returns the new hash");
  console.log(`wrote hello.ts (${content.byteLength} bytes, hash ${written.newHash.slice(0, 12)}…)`);

  const { workspace: stranded } = await client.strandSession({ sessionId: created.sessionId, reason: "typescript example" });
  expect(stranded?.lifecycleState === LifecycleState.STRANDED, "the session is stranded");
  console.log(`stranded session ${created.sessionId}`);

  try {
    await client.readFile({ sessionId: created.sessionId, path: "hello.ts" });
    throw new Unexpected("a stranded session must not read files");
  } catch (err) {
    if (err instanceof Unexpected) throw err;
    const e = ConnectError.from(err);
    const info = e.findDetails(ErrorInfoSchema)[0];
    expect(e.code === Code.FailedPrecondition, `FAILED_PRECONDITION, got ${Code[e.code]}`);
    expect(info?.reason === "SESSION_STRANDED" && info.domain === "berth", `ErrorInfo SESSION_STRANDED, got ${info?.reason}`);
    console.log(`  a stranded session answers ${Code[e.code]} ${info.reason} (stranded_at ${info.metadata["stranded_at"]})`);
  }

  const resumed = await client.resumeSession({ deadSessionId: created.sessionId, agentId: agent });
  expect(resumed.workspace?.workspaceId === created.workspaceId, "resume keeps the workspace id");
  expect(resumed.newSessionId !== "" && resumed.newSessionId !== created.sessionId, "resume mints a new session id");
  expect(resumed.workspace.lifecycleState === LifecycleState.ACTIVE, "the resumed workspace is active");
  console.log(`resumed as session ${resumed.newSessionId} (same workspace)`);

  const read = await client.readFile({ sessionId: resumed.newSessionId, path: "hello.ts" });
  expect(Buffer.from(read.content).equals(Buffer.from(content)), "the resumed session reads what was written");
  console.log("read hello.ts back through the resumed session");

  console.log("watching the repository's events from after_seq=0:");
  const abort = new AbortController();
  const kinds: string[] = [];
  let lastSeq = 0n;
  try {
    const giveUp = setTimeout(() => abort.abort(), 15_000);
    for await (const event of berth.events({ afterSeq: 0n, repoIds: [repo.id] }, { signal: abort.signal })) {
      expect(event.seq > lastSeq, `seq increases (${event.seq} after ${lastSeq})`);
      lastSeq = event.seq;
      kinds.push(event.kind);
      console.log(`  seq ${event.seq}: ${event.kind} session=${event.sessionId || "-"} reason=${event.reason || "-"}`);
      if (event.kind === "session.resumed") break; // leaving the loop cancels the stream
    }
    clearTimeout(giveUp);
  } finally {
    abort.abort();
  }
  for (const kind of ["session.created", "session.stranded", "session.resumed"]) expect(kinds.includes(kind), `saw ${kind} (saw ${kinds.join(", ")})`);
  expect(
    kinds.indexOf("session.created") < kinds.indexOf("session.stranded") && kinds.indexOf("session.stranded") < kinds.indexOf("session.resumed"),
    "events in commit order",
  );
  console.log(`saw ${kinds.length} events in order, then cancelled the stream`);
  console.log("OK");
}

main().then(
  // A cancelled stream's deadline timer (timeoutMs) and keep-alive sockets would hold the process open a while.
  () => process.exit(0),
  (err: unknown) => {
  if (err instanceof Unexpected) console.error(`UNEXPECTED: ${err.message}`);
  else if (err instanceof ConnectError) console.error(`UNEXPECTED RPC failure: ${Code[err.code]}: ${err.rawMessage}`);
  else console.error("UNEXPECTED:", err);
  process.exit(1);
  },
);
