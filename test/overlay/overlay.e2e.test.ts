/**
 * The workspace overlay, claims and conflict awareness end to end (issue 5): a real server, real
 * PostgreSQL, a real git repository as the base, calls through grpc-js (and Connect for the
 * transport limits).
 */
import { createHash } from "node:crypto";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ChangesetState, FileChange, FileSource, SymbolChangeKind, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { failure } from "../support/rpc-error.js";
import { needs } from "../support/services.js";
import { claimsOf, eventKinds, gitRepo, overlayRows, PY, text, tsModule, utf8 } from "./helpers.js";

let berth: TestBerth;
let repoId: string;
let src: { dir: string; head: string };
let agentSeq = 0;

beforeAll(async () => {
  src = gitRepo();
  berth = await startBerth();
  repoId = (await berth.grpc.registerRepository({ name: "overlay-demo", sourcePath: src.dir })).repository!.id;
});
afterAll(async () => {
  await berth?.close();
});

async function session(b: TestBerth = berth, repo = repoId) {
  const { workspace } = await b.grpc.createWorkspace({ repoId: repo, mode: WorkspaceMode.EPHEMERAL, agentId: `claude-${++agentSeq}` });
  return workspace!;
}

const db = () => berth.database.opened.db;

describe("symbol claims", () => {
  it("lets two agents write different functions of one file; the same function is SYMBOL_LOCKED until the holder is stranded", async () => {
    const a = await session();
    const b = await session();
    const wa = await berth.grpc.writeFile({ sessionId: a.sessionId, path: "src/util.ts", content: utf8(tsModule({ alpha: 100 })) });
    expect(wa.change).toBe(FileChange.MODIFIED);
    expect(wa.symbols).toEqual([expect.objectContaining({ name: "alpha", kind: "function", change: SymbolChangeKind.MODIFIED })]);
    const wb = await berth.grpc.writeFile({ sessionId: b.sessionId, path: "src/util.ts", content: utf8(tsModule({ beta: 200 })) });
    expect(wb.symbols.map((s) => s.name)).toEqual(["beta"]);
    expect(wb.conflicts).toEqual([expect.objectContaining({ sessionId: a.sessionId, agentName: a.agentName, symbols: ["alpha"] })]);

    // b now edits alpha too: held by a.
    const f = await failure(berth.grpc.writeFile({ sessionId: b.sessionId, path: "src/util.ts", content: utf8(tsModule({ alpha: 7, beta: 200 })) }));
    expect(f).toMatchObject({ code: "FAILED_PRECONDITION", reason: "SYMBOL_LOCKED" });
    expect(f.metadata).toMatchObject({ path: "src/util.ts", symbol: "alpha", holder_session_id: a.sessionId, holder_agent_name: a.agentName, holder_agent_id: a.agentId });
    expect(new Date(f.metadata.since!).getTime()).toBeGreaterThan(0);
    expect(await eventKinds(db(), b.workspaceId)).toContain("claim.conflict");
    // Nothing of the refused write: b's overlay still has its first version.
    expect(text((await berth.grpc.readFile({ sessionId: b.sessionId, path: "src/util.ts" })).content)).toBe(tsModule({ beta: 200 }));

    await berth.grpc.strandSession({ sessionId: a.sessionId, reason: "test" });
    expect(await claimsOf(db(), a.workspaceId)).toEqual([]);
    const again = await berth.grpc.writeFile({ sessionId: b.sessionId, path: "src/util.ts", content: utf8(tsModule({ alpha: 7, beta: 200 })) });
    expect(again.symbols.map((s) => s.name)).toEqual(["alpha"]);
    expect(await claimsOf(db(), b.workspaceId)).toEqual([
      { path: "src/util.ts", symbol: "alpha" },
      { path: "src/util.ts", symbol: "beta" },
    ]);
  });

  it("claiming a symbol the file does not define yet is a reservation: granted, marked, exclusive, ordinary once a write defines it (issue 29)", async () => {
    const a = await session();
    const b = await session();
    const fn = (name: string, value: number) => `export function ${name}(): number {\n  return ${value};\n}\n`;
    await berth.grpc.writeFile({ sessionId: a.sessionId, path: "src/claims-nf.ts", content: utf8(fn("alpha", 1)) });
    const granted = await berth.grpc.claimSymbols({ sessionId: a.sessionId, symbols: [{ path: "src/claims-nf.ts", symbol: "alpha" }, { path: "src/claims-nf.ts", symbol: "parse_header" }] });
    expect(granted.claims.map((c) => [c.symbol, c.notYetDefined])).toEqual([
      ["alpha", false],
      ["parse_header", true],
    ]);
    // A file that does not exist yet: every named symbol of it is a reservation.
    const fresh = await berth.grpc.claimSymbols({ sessionId: a.sessionId, symbols: [{ path: "src/claims-new.ts", symbol: "Parser" }] });
    expect(fresh.claims.map((c) => [c.path, c.symbol, c.notYetDefined])).toEqual([["src/claims-new.ts", "Parser", true]]);
    const listed = async () => (await berth.grpc.listClaims({ sessionId: a.sessionId })).claims.map((c) => [c.path, c.symbol, c.notYetDefined]);
    expect(await listed()).toEqual([
      ["src/claims-new.ts", "Parser", true],
      ["src/claims-nf.ts", "alpha", false],
      ["src/claims-nf.ts", "parse_header", true],
    ]);

    // Exclusive like any claim: another session's claim, or its write adding the symbol, is SYMBOL_LOCKED naming a.
    const claimed = await failure(berth.grpc.claimSymbols({ sessionId: b.sessionId, symbols: [{ path: "src/claims-nf.ts", symbol: "parse_header" }] }));
    expect(claimed).toMatchObject({ code: "FAILED_PRECONDITION", reason: "SYMBOL_LOCKED" });
    expect(claimed.metadata).toMatchObject({ symbol: "parse_header", holder_session_id: a.sessionId });
    const written = await failure(berth.grpc.writeFile({ sessionId: b.sessionId, path: "src/claims-new.ts", content: utf8("export class Parser {}\n") }));
    expect(written).toMatchObject({ reason: "SYMBOL_LOCKED" });
    expect(written.metadata).toMatchObject({ symbol: "Parser", holder_session_id: a.sessionId });

    // a's write defining parse_header makes it an ordinary claim; a write removing it makes it a reservation again.
    await berth.grpc.writeFile({ sessionId: a.sessionId, path: "src/claims-nf.ts", content: utf8(fn("alpha", 1) + fn("parse_header", 0)) });
    expect((await listed()).find((c) => c[1] === "parse_header")).toEqual(["src/claims-nf.ts", "parse_header", false]);
    await berth.grpc.writeFile({ sessionId: a.sessionId, path: "src/claims-new.ts", content: utf8("export class Parser {}\n") });
    expect((await listed()).find((c) => c[1] === "Parser")).toEqual(["src/claims-new.ts", "Parser", false]);
    await berth.grpc.writeFile({ sessionId: a.sessionId, path: "src/claims-nf.ts", content: utf8(fn("alpha", 2)) });
    expect((await listed()).find((c) => c[1] === "parse_header")).toEqual(["src/claims-nf.ts", "parse_header", true]);
    // The mark is stored with the claim, as PostgreSQL has it for every instance.
    const rows = await sql<{ symbol: string; not_yet_defined: boolean }>`
      SELECT symbol, not_yet_defined FROM claims WHERE workspace_id = ${a.workspaceId}::uuid ORDER BY symbol`.execute(db());
    expect(rows.rows).toEqual([
      { symbol: "Parser", not_yet_defined: false },
      { symbol: "alpha", not_yet_defined: false },
      { symbol: "parse_header", not_yet_defined: true },
    ]);

    // A file Berth cannot split into symbols is claimed whole: a named symbol of it is still refused, claiming nothing.
    const before = await claimsOf(db(), a.workspaceId);
    const f = await failure(berth.grpc.claimSymbols({ sessionId: a.sessionId, symbols: [{ path: "README.md", symbol: "intro" }] }));
    expect(f).toMatchObject({ code: "NOT_FOUND", reason: "SYMBOL_NOT_FOUND" });
    expect(await claimsOf(db(), a.workspaceId)).toEqual(before);
    // A file as a whole (symbol "") may be claimed before it is written, and is never marked.
    const whole = await berth.grpc.claimSymbols({ sessionId: a.sessionId, symbols: [{ path: "src/claims-whole.ts", symbol: "" }] });
    expect(whole.claims.map((c) => [c.path, c.symbol, c.notYetDefined])).toEqual([["src/claims-whole.ts", "", false]]);
  });

  it("abandoning an active session releases its claims with claim.released events naming them", async () => {
    const a = await session();
    await berth.grpc.writeFile({ sessionId: a.sessionId, path: "src/claims-abandon.ts", content: utf8(tsModule({ alpha: 1, beta: 2 })) });
    await berth.grpc.claimSymbols({ sessionId: a.sessionId, symbols: [{ path: "src/claims-abandon.ts", symbol: "alpha" }, { path: "src/claims-abandon.ts", symbol: "beta" }] });
    expect(await claimsOf(db(), a.workspaceId)).toEqual(expect.arrayContaining([{ path: "src/claims-abandon.ts", symbol: "alpha" }, { path: "src/claims-abandon.ts", symbol: "beta" }]));
    await berth.grpc.abandonSession({ sessionId: a.sessionId, reason: "done with it" });
    expect(await claimsOf(db(), a.workspaceId)).toEqual([]);
    const released = await sql<{ reason: string }>`SELECT reason FROM events WHERE workspace_id = ${a.workspaceId}::uuid AND kind = 'claim.released'`.execute(db());
    // One event per (session, path), naming its symbols (src/claims/claim-events.ts).
    expect(released.rows.length).toBeGreaterThan(0);
    expect(released.rows.every((r) => r.reason === "session_abandoned")).toBe(true);
    expect(await eventKinds(db(), a.workspaceId)).toContain("session.abandoned");
  });

  it("refuses a write touching three symbols when one is held elsewhere: nothing written, no claim left behind", async () => {
    const holder = await session();
    const writer = await session();
    await berth.grpc.claimSymbols({ sessionId: holder.sessionId, symbols: [{ path: "src/util.ts", symbol: "epsilon" }] });
    const f = await failure(
      berth.grpc.writeFile({ sessionId: writer.sessionId, path: "src/util.ts", content: utf8(tsModule({ gamma: 30, delta: 40, epsilon: 50 })) }),
    );
    expect(f).toMatchObject({ code: "FAILED_PRECONDITION", reason: "SYMBOL_LOCKED" });
    expect(f.metadata).toMatchObject({ symbol: "epsilon", holder_session_id: holder.sessionId });
    expect(await claimsOf(db(), writer.workspaceId)).toEqual([]);
    expect(await overlayRows(db(), writer.workspaceId)).toEqual([]);
    const kinds = await eventKinds(db(), writer.workspaceId);
    expect(kinds).not.toContain("file.written");
    expect(kinds).not.toContain("claim.acquired");
    expect(kinds).toContain("claim.conflict");
    // Re-acquiring one's own claim is fine; releasing frees it for the writer.
    await berth.grpc.claimSymbols({ sessionId: holder.sessionId, symbols: [{ path: "src/util.ts", symbol: "epsilon" }] });
    expect((await berth.grpc.releaseSymbols({ sessionId: holder.sessionId })).released).toBe(1);
    const ok = await berth.grpc.writeFile({ sessionId: writer.sessionId, path: "src/util.ts", content: utf8(tsModule({ gamma: 30, delta: 40, epsilon: 50 })) });
    expect(ok.symbols.map((s) => s.name)).toEqual(["gamma", "delta", "epsilon"]);
  });

  it("claims a file without symbols as a whole (symbol \"\") and releases claims on SUBMITTED", async () => {
    const a = await session();
    const b = await session();
    const w = await berth.grpc.writeFile({ sessionId: a.sessionId, path: "README.md", content: utf8("# changed\n") });
    expect(w.symbols).toEqual([expect.objectContaining({ name: "README.md", kind: "file" })]);
    expect(await claimsOf(db(), a.workspaceId)).toEqual([{ path: "README.md", symbol: "" }]);
    const f = await failure(berth.grpc.writeFile({ sessionId: b.sessionId, path: "README.md", content: utf8("# mine\n") }));
    expect(f.reason).toBe("SYMBOL_LOCKED");
    await berth.grpc.transitionChangeset({ changesetId: a.changesetId, toState: ChangesetState.SUBMITTED });
    expect(await claimsOf(db(), a.workspaceId)).toEqual([]);
    expect(await eventKinds(db(), a.workspaceId)).toContain("claim.released");
  });

  it("releases claims on strand and on abandon (issue 3, defect 5)", async () => {
    for (const how of ["strand", "abandon"] as const) {
      const s = await session();
      await berth.grpc.writeFile({ sessionId: s.sessionId, path: "py/tasks.py", content: utf8(PY.replace("return name", "return name.upper()")) });
      expect(await claimsOf(db(), s.workspaceId)).toEqual([{ path: "py/tasks.py", symbol: "TaskService.create_task" }]);
      if (how === "strand") await berth.grpc.strandSession({ sessionId: s.sessionId, reason: "t" });
      else await berth.grpc.abandonSession({ sessionId: s.sessionId, reason: "t" });
      expect(await claimsOf(db(), s.workspaceId)).toEqual([]);
      if (how === "strand") expect(await overlayRows(db(), s.workspaceId)).toEqual([{ path: "py/tasks.py", change: "modified" }]);
      else expect(await overlayRows(db(), s.workspaceId)).toEqual([]);
    }
  });
});

describe("describe_other_modifiers", () => {
  it("says nothing, one symbol, three symbols, more than three, and several agents", async () => {
    const path = "src/describe.ts";
    const describe_ = (exclude = "") => berth.grpc.describeOtherModifiers({ repoId, path, excludeSessionId: exclude });
    expect((await describe_()).text).toBe("");
    const a = await session();
    await berth.grpc.writeFile({ sessionId: a.sessionId, path, content: utf8("export function create_task() {}\n") });
    expect((await describe_()).text).toBe(`create_task modified by ${a.agentName}`);
    expect((await describe_(a.sessionId)).text).toBe("");

    const b = await session();
    await berth.grpc.writeFile({ sessionId: b.sessionId, path: "src/describe3.ts", content: utf8("export function a() {}\nexport function b() {}\nexport function c() {}\n") });
    const r3 = await berth.grpc.describeOtherModifiers({ repoId, path: "src/describe3.ts" });
    expect(r3.text).toBe(`{a, b, c} modified by ${b.agentName}`);
    expect(r3.modifiers).toEqual([expect.objectContaining({ sessionId: b.sessionId, agentName: b.agentName, symbols: ["a", "b", "c"], changesetState: ChangesetState.DRAFT })]);

    const c = await session();
    await berth.grpc.writeFile({ sessionId: c.sessionId, path: "src/describe5.ts", content: utf8(["a", "b", "c", "d", "e"].map((n) => `export function ${n}() {}\n`).join("")) });
    expect((await berth.grpc.describeOtherModifiers({ repoId, path: "src/describe5.ts" })).text).toBe(`{a, b, c, +2 more} modified by ${c.agentName}`);

    // Several agents on one path, one of them on a file without symbols.
    const d = await session();
    const e = await session();
    await berth.grpc.writeFile({ sessionId: d.sessionId, path: "notes.txt", content: utf8("d\n") });
    await berth.grpc.releaseSymbols({ sessionId: d.sessionId });
    await berth.grpc.writeFile({ sessionId: e.sessionId, path: "notes.txt", content: utf8("e\n") });
    expect((await berth.grpc.describeOtherModifiers({ repoId, path: "notes.txt" })).text).toBe(`modified by ${d.agentName}; modified by ${e.agentName}`);
    expect((await berth.grpc.describeOtherModifiers({ repoId, path: "notes.txt", excludeSessionId: d.sessionId })).text).toBe(`modified by ${e.agentName}`);
    // Abandoned work leaves the description.
    await berth.grpc.abandonSession({ sessionId: e.sessionId });
    expect((await berth.grpc.describeOtherModifiers({ repoId, path: "notes.txt" })).text).toBe(`modified by ${d.agentName}`);
  });
});

describe("paths, sizes and hashes", () => {
  const BAD = ["/etc/passwd", "../x", "a/../../b", "a\\b", "a\u0000b", "x".repeat(4097), ".git/hooks/post-checkout", "", "./"];
  it.each(BAD.map((p) => [JSON.stringify(p.length > 40 ? `${p.slice(0, 10)}…(${p.length})` : p), p]))("refuses path %s with INVALID_ARGUMENT on path, storing nothing", async (_label, bad) => {
    const s = await session();
    const f = await failure(berth.grpc.writeFile({ sessionId: s.sessionId, path: bad, content: utf8("x") }));
    expect(f.code).toBe("INVALID_ARGUMENT");
    expect(f.fields).toEqual(["path"]);
    expect(await overlayRows(db(), s.workspaceId)).toEqual([]);
    expect((await failure(berth.grpc.readFile({ sessionId: s.sessionId, path: bad }))).code).toBe("INVALID_ARGUMENT");
  });

  it("normalises ./ and duplicate slashes", async () => {
    const s = await session();
    await berth.grpc.writeFile({ sessionId: s.sessionId, path: "./docs//guide/./a.md", content: utf8("hi") });
    expect(await overlayRows(db(), s.workspaceId)).toEqual([{ path: "docs/guide/a.md", change: "added" }]);
    expect(text((await berth.grpc.readFile({ sessionId: s.sessionId, path: "docs/guide/a.md" })).content)).toBe("hi");
  });

  it("refuses content over BERTH_MAX_FILE_BYTES (8 MiB) with RESOURCE_EXHAUSTED FILE_TOO_LARGE through both transports, storing nothing", async () => {
    const s = await session();
    const big = new Uint8Array(8 * 1024 * 1024 + 1).fill(97);
    for (const client of [berth.grpc, berth.connect]) {
      const f = await failure(client.writeFile({ sessionId: s.sessionId, path: "big.bin", content: big }));
      expect(f).toMatchObject({ code: "RESOURCE_EXHAUSTED", reason: "FILE_TOO_LARGE" });
      expect(f.metadata).toMatchObject({ limit_bytes: String(8 * 1024 * 1024), size_bytes: String(big.byteLength), path: "big.bin" });
    }
    expect(await overlayRows(db(), s.workspaceId)).toEqual([]);
    // Exactly the limit is accepted over gRPC (the transport's receive limit is above it).
    const ok = await berth.grpc.writeFile({ sessionId: s.sessionId, path: "big.bin", content: big.subarray(1) });
    expect(ok.change).toBe(FileChange.ADDED);
  });

  it("makes a write conditional on expected_hash: ABORTED HASH_MISMATCH with the current hash", async () => {
    const s = await session();
    const base = await berth.grpc.readFile({ sessionId: s.sessionId, path: "README.md" });
    expect(base.source).toBe(FileSource.BASE);
    const f = await failure(berth.grpc.writeFile({ sessionId: s.sessionId, path: "README.md", content: utf8("x"), expectedHash: "0".repeat(64) }));
    expect(f).toMatchObject({ code: "ABORTED", reason: "HASH_MISMATCH" });
    expect(f.metadata.current_hash).toBe(base.hash);
    expect((await failure(berth.grpc.writeFile({ sessionId: s.sessionId, path: "README.md", content: utf8("x"), expectedHash: "" }))).reason).toBe("HASH_MISMATCH");
    const w = await berth.grpc.writeFile({ sessionId: s.sessionId, path: "README.md", content: utf8("x"), expectedHash: base.hash });
    await berth.grpc.writeFile({ sessionId: s.sessionId, path: "new.md", content: utf8("n"), expectedHash: "" });
    expect((await failure(berth.grpc.writeFile({ sessionId: s.sessionId, path: "README.md", content: utf8("y"), expectedHash: base.hash }))).metadata.current_hash).toBe(w.newHash);
  });
});

describe("ReadFile and ListFiles", () => {
  it("reads the base through git, the overlay first, NOT_FOUND when neither has it, and a tombstone hides the base", async () => {
    // A repository of its own: the other tests hold claims on src/util.ts.
    const fresh = (await berth.grpc.registerRepository({ name: "overlay-read", sourcePath: src.dir })).repository!.id;
    const s = await session(berth, fresh);
    const py = await berth.grpc.readFile({ sessionId: s.sessionId, path: "py/tasks.py" });
    expect(text(py.content)).toBe(PY);
    expect(py.source).toBe(FileSource.BASE);
    expect((await failure(berth.grpc.readFile({ sessionId: s.sessionId, path: "nope.ts" }))).reason).toBe("FILE_NOT_FOUND");
    await berth.grpc.writeFile({ sessionId: s.sessionId, path: "py/tasks.py", content: utf8(PY + "\n\ndef extra():\n    pass\n") });
    expect((await berth.grpc.readFile({ sessionId: s.sessionId, path: "py/tasks.py" })).source).toBe(FileSource.OVERLAY);
    const del = await berth.grpc.deleteFile({ sessionId: s.sessionId, path: "src/util.ts" });
    expect(del.symbols.map((x) => x.name)).toEqual(["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]);
    expect(del.symbols.every((x) => x.change === SymbolChangeKind.DELETED)).toBe(true);
    // Deleted in this workspace (issue 15): said so, not "neither in the overlay nor in the base".
    expect((await failure(berth.grpc.readFile({ sessionId: s.sessionId, path: "src/util.ts" }))).reason).toBe("FILE_DELETED");
    expect((await failure(berth.grpc.deleteFile({ sessionId: s.sessionId, path: "src/util.ts" }))).reason).toBe("FILE_NOT_FOUND");
    expect(await overlayRows(db(), s.workspaceId)).toContainEqual({ path: "src/util.ts", change: "deleted" });
    // Deleting a file the base lacks removes the row.
    await berth.grpc.writeFile({ sessionId: s.sessionId, path: "tmp.txt", content: utf8("t") });
    await berth.grpc.deleteFile({ sessionId: s.sessionId, path: "tmp.txt" });
    expect((await overlayRows(db(), s.workspaceId)).map((r) => r.path)).not.toContain("tmp.txt");
  });

  it("lists the merged view in path order with modified_by_other, a prefix and pages; deleted paths only with include_deleted", async () => {
    const me = await session();
    const other = await session();
    await berth.grpc.writeFile({ sessionId: me.sessionId, path: "src/added.ts", content: utf8("export const x = 1;\n") });
    await berth.grpc.deleteFile({ sessionId: me.sessionId, path: "src/f03.txt" });
    await berth.grpc.writeFile({ sessionId: other.sessionId, path: "src/f05.txt", content: utf8("other\n") });
    const all = await berth.grpc.listFiles({ sessionId: me.sessionId, prefix: "src/", includeDeleted: true });
    const paths = all.entries.map((e) => e.path);
    expect(paths).toEqual([...paths].sort());
    expect(paths).toContain("src/added.ts");
    // A deleted base path is listed, marked, when asked for (issues 15, 29).
    expect(all.entries.find((e) => e.path === "src/f03.txt")).toMatchObject({ deleted: true, source: FileSource.OVERLAY, change: FileChange.DELETED });
    expect(all.entries.filter((e) => e.deleted).map((e) => e.path)).toEqual(["src/f03.txt"]);
    // Without include_deleted the merged view lists what exists: every listed path reads.
    const existing = await berth.grpc.listFiles({ sessionId: me.sessionId, prefix: "src/" });
    expect(existing.entries.map((e) => e.path)).toEqual(paths.filter((p) => p !== "src/f03.txt"));
    expect(existing.entries.some((e) => e.deleted)).toBe(false);
    for (const e of existing.entries) await berth.grpc.readFile({ sessionId: me.sessionId, path: e.path });
    expect(all.entries.find((e) => e.path === "src/added.ts")).toMatchObject({ source: FileSource.OVERLAY, change: FileChange.ADDED, modifiedByOther: false });
    expect(all.entries.find((e) => e.path === "src/f05.txt")).toMatchObject({ source: FileSource.BASE, modifiedByOther: true });
    expect(all.nextPageToken).toBe("");
    // Pages of 7 give the same list.
    const paged: string[] = [];
    let token = "";
    let pages = 0;
    do {
      const page = await berth.grpc.listFiles({ sessionId: me.sessionId, prefix: "src/", pageSize: 7, pageToken: token, includeDeleted: true });
      paged.push(...page.entries.map((e) => e.path));
      token = page.nextPageToken;
      pages++;
    } while (token !== "");
    expect(paged).toEqual(paths);
    expect(pages).toBe(Math.ceil(paths.length / 7));
    // Without the deleted path, page_size still counts returned entries: full pages of 7, none skipped.
    const sizes: number[] = [];
    const pagedExisting: string[] = [];
    do {
      const page = await berth.grpc.listFiles({ sessionId: me.sessionId, prefix: "src/", pageSize: 7, pageToken: token });
      sizes.push(page.entries.length);
      pagedExisting.push(...page.entries.map((e) => e.path));
      token = page.nextPageToken;
    } while (token !== "");
    expect(pagedExisting).toEqual(existing.entries.map((e) => e.path));
    expect(sizes.slice(0, -1).every((n) => n === 7)).toBe(true);
    expect((await failure(berth.grpc.listFiles({ sessionId: me.sessionId, pageToken: "!!" }))).fields).toEqual(["page_token"]);
  });
});

describe("STALE_OVERLAY", () => {
  it("refuses a blind write after another session's change of the path went up for review, until the path is read again", async () => {
    const writer = await session();
    const late = await session();
    await berth.grpc.writeFile({ sessionId: writer.sessionId, path: "py/tasks.py", content: utf8(PY.replace("return 1", "return 2")) });
    await berth.grpc.transitionChangeset({ changesetId: writer.changesetId, toState: ChangesetState.SUBMITTED });
    const f = await failure(berth.grpc.writeFile({ sessionId: late.sessionId, path: "py/tasks.py", content: utf8(PY.replace("return None", "return 0")) }));
    expect(f).toMatchObject({ code: "FAILED_PRECONDITION", reason: "STALE_OVERLAY" });
    expect(f.metadata).toMatchObject({ other_session_id: writer.sessionId, other_changeset_id: writer.changesetId, other_changeset_state: "SUBMITTED" });
    await berth.grpc.readFile({ sessionId: late.sessionId, path: "py/tasks.py" });
    const ok = await berth.grpc.writeFile({ sessionId: late.sessionId, path: "py/tasks.py", content: utf8(PY.replace("return None", "return 0")) });
    expect(ok.symbols.map((s) => s.name)).toEqual(["TaskService.delete_task"]);
  });

  it("(issue 14 c) refuses the blind overwrite of a never-read file by a session opened after the other's submit; expected_hash of the current content overrides", async () => {
    const shared = "src/f23.txt";
    const b = await session();
    await berth.grpc.writeFile({ sessionId: b.sessionId, path: shared, content: utf8("B's submitted change\n") });
    await berth.grpc.transitionChangeset({ changesetId: b.changesetId, toState: ChangesetState.SUBMITTED });
    // A opens its workspace afterwards: its base does not hold B's submitted change.
    const a = await session();
    const blind = await failure(berth.grpc.writeFile({ sessionId: a.sessionId, path: shared, content: utf8("A's blind overwrite\n") }));
    expect(blind).toMatchObject({ code: "FAILED_PRECONDITION", reason: "STALE_OVERLAY" });
    expect(blind.metadata).toMatchObject({ path: shared, other_session_id: b.sessionId, other_changeset_id: b.changesetId, other_changeset_state: "SUBMITTED" });
    // The explicit override: the hash of the content A overwrites (its base's file).
    const current = createHash("sha256").update("file 23\n").digest("hex");
    const ok = await berth.grpc.writeFile({ sessionId: a.sessionId, path: shared, content: utf8("A's deliberate overwrite\n"), expectedHash: current });
    expect(ok.change).toBe(FileChange.MODIFIED);
  });
});

describe("restart and resume", () => {
  it("strands an active session at restart (claims released) and restores its overlay byte for byte on resume", async () => {
    const database = await createTestDatabase();
    let b1: TestBerth | undefined;
    let b2: TestBerth | undefined;
    try {
      b1 = await startBerth({ database });
      const repo = (await b1.grpc.registerRepository({ name: "restart", sourcePath: src.dir })).repository!.id;
      const s = await session(b1, repo);
      const binary = new Uint8Array(512);
      for (let i = 0; i < 512; i++) binary[i] = i % 256;
      const wrote = await b1.grpc.writeFile({ sessionId: s.sessionId, path: "assets/all-bytes.bin", content: binary });
      await b1.grpc.writeFile({ sessionId: s.sessionId, path: "src/util.ts", content: utf8(tsModule({ zeta: 99 })) });
      expect(await claimsOf(database.opened.db, s.workspaceId)).toHaveLength(2);
      await b1.stop();

      b2 = await startBerth({ database });
      const f = await failure(b2.grpc.readFile({ sessionId: s.sessionId, path: "assets/all-bytes.bin" }));
      expect(f.reason).toBe("SESSION_STRANDED");
      // By design: claims are released when a session is stranded; the next write takes them again.
      expect(await claimsOf(database.opened.db, s.workspaceId)).toEqual([]);
      const { newSessionId } = await b2.grpc.resumeSession({ deadSessionId: s.sessionId, agentId: s.agentId });
      const back = await b2.grpc.readFile({ sessionId: newSessionId, path: "assets/all-bytes.bin" });
      expect(Buffer.from(back.content).equals(Buffer.from(binary))).toBe(true);
      expect(back.hash).toBe(wrote.newHash);
      expect(back.source).toBe(FileSource.OVERLAY);
      expect(text((await b2.grpc.readFile({ sessionId: newSessionId, path: "src/util.ts" })).content)).toBe(tsModule({ zeta: 99 }));
      await b2.grpc.writeFile({ sessionId: newSessionId, path: "src/util.ts", content: utf8(tsModule({ zeta: 98 })) });
      expect(await claimsOf(database.opened.db, s.workspaceId)).toEqual([{ path: "src/util.ts", symbol: "zeta" }]);
    } finally {
      await b1?.stop();
      await b2?.stop();
      await database.drop();
    }
  });
});

needs({ postgres: true })("two instances on one database", () => {
  it("sees each other's claims and modifications", async () => {
    const database = await createTestDatabase("postgres");
    const second: TestDatabase = { ...database, opened: await database.reopen() };
    let b1: TestBerth | undefined;
    let b2: TestBerth | undefined;
    try {
      b1 = await startBerth({ database });
      b2 = await startBerth({ database: second });
      const repo = (await b1.grpc.registerRepository({ name: "shared", sourcePath: src.dir })).repository!.id;
      const a = await session(b1, repo);
      const b = await session(b2, repo);
      await b1.grpc.writeFile({ sessionId: a.sessionId, path: "src/util.ts", content: utf8(tsModule({ alpha: 1000 })) });
      const f = await failure(b2.grpc.writeFile({ sessionId: b.sessionId, path: "src/util.ts", content: utf8(tsModule({ alpha: 2000 })) }));
      expect(f).toMatchObject({ reason: "SYMBOL_LOCKED" });
      expect(f.metadata).toMatchObject({ holder_session_id: a.sessionId, holder_agent_name: a.agentName });
      await b2.grpc.writeFile({ sessionId: b.sessionId, path: "src/util.ts", content: utf8(tsModule({ beta: 2000 })) });
      // Each instance learns the other's modifications through the event feed.
      await vi.waitFor(async () => {
        expect((await b2!.grpc.describeOtherModifiers({ repoId: repo, path: "src/util.ts", excludeSessionId: b.sessionId })).text).toBe(`alpha modified by ${a.agentName}`);
        expect((await b1!.grpc.describeOtherModifiers({ repoId: repo, path: "src/util.ts", excludeSessionId: a.sessionId })).text).toBe(`beta modified by ${b.agentName}`);
      }, { timeout: 5000, interval: 100 });
      const rows = await sql<{ n: string }>`SELECT count(*) AS n FROM claims WHERE repo_id = ${repo}::uuid`.execute(database.opened.db);
      expect(Number(rows.rows[0]!.n)).toBe(2);
    } finally {
      await b1?.stop();
      await b2?.stop();
      await second.opened.close();
      await database.drop();
    }
  });
});
