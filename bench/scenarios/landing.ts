/**
 * Landing at git's speed (issue 30): a changeset of 1,000 written files (4 KiB TypeScript
 * modules over a 1,000-file repository, on PostgreSQL) through CommitChangeset, MERGED,
 * DiffWorkspace and RebaseWorkspace, each side by side with git doing the same work in a
 * checkout of the same repository, in the same round (alternating which goes first):
 *
 * - CommitChangeset vs `git add -A && git commit` of the same files;
 * - MERGED (the commit built again, then the fast-forward of main) vs the same git baseline;
 * - DiffWorkspace vs `git diff` of the same files in the checkout (working tree against index);
 * - RebaseWorkspace onto a commit that changed every one of the files elsewhere (1,000 clean
 *   three-way merges) vs `git rebase` of a commit of the same files onto it (report only).
 *
 * Each round uses a fresh session (a commit of an unchanged overlay is answered without work)
 * and new contents; the set-up (WriteFile, 16 in flight; the files written into a checkout) is
 * not timed. Each timed Berth call runs back to back with its git baseline (which goes first
 * alternates), and the ratio is the median of those pairs' ratios: on a shared machine whose load
 * moves by the second, only a pair measured together compares.
 */
import { rmSync } from "node:fs";
import { createBenchDatabase } from "../lib/database.js";
import { SERVICE } from "../lib/fixtures.js";
import { approve, checkout, commitFiles, destroy, git, openSession, timed, writeAll, writeTree, type FileWrite } from "../lib/landing.js";
import { makeGitRepo, tsModule4KiB } from "../lib/repos.js";
import { RpcClient } from "../lib/rpc.js";
import { median, round, type Scenario } from "../lib/scenario.js";
import { startBerth } from "../lib/servers.js";
import { ChangesetState } from "../../gen/berth/v1/types_pb.js";
import {
  CommitChangesetRequestSchema,
  CommitChangesetResponseSchema,
  DiffWorkspaceRequestSchema,
  DiffWorkspaceResponseSchema,
  RebaseWorkspaceRequestSchema,
  RebaseWorkspaceResponseSchema,
  RegisterRepositoryRequestSchema,
  RegisterRepositoryResponseSchema,
  TransitionChangesetRequestSchema,
  TransitionChangesetResponseSchema,
} from "../../gen/berth/v1/workspace_service_pb.js";

const FILES = Number(process.env.BENCH_LANDING_FILES ?? 1_000);
const COMMIT_RATIO = 3;
const DIFF_RATIO = 2;
const LONG = 600_000;
/** DiffWorkspace / git diff pairs per round (a diff changes nothing: it can be asked again). */
const DIFF_TRIES = 3;

const enc = new TextEncoder();
/** File i's module: method 0 carries `mine` (a session's change), a last line `upstream` (the base's change): far apart, so they merge cleanly. */
const moduleOf = (i: number, mine: number, upstream: number) => enc.encode(`// module ${i}\n${tsModule4KiB(0, mine)}export const revision = ${upstream};\n`);
const pathOf = (i: number) => `pkg${i % 10}/mod${i % 7}/file${i}.ts`;
/** Every file at (mine, upstream), over its version (mine0, upstream0). */
const filesAt = (mine: number, upstream: number, over: [number, number]): FileWrite[] =>
  Array.from({ length: FILES }, (_, i) => ({ path: pathOf(i), content: moduleOf(i, mine, upstream), over: moduleOf(i, over[0], over[1]) }));

export const scenario: Scenario = {
  name: "landing",
  title: `Landing ${FILES.toLocaleString("en-US")} written files: CommitChangeset, MERGED, DiffWorkspace, RebaseWorkspace vs git in a checkout`,
  async run(ctx) {
    const source = makeGitRepo(0, "berth-bench-landing-");
    // The repository's files are the modules at version (0, 0); HEAD detached, so MERGED into main touches no checkout.
    commitFiles(source, filesAt(0, 0, [0, 0]), "modules");
    git(source, ["checkout", "-q", "--detach"]);
    const db = await createBenchDatabase();
    const berth = await startBerth({ databaseUrl: db.url, cpuProfDir: ctx.cpuProfDir });
    const scratch: string[] = [];
    try {
      const c = new RpcClient(berth.grpcUrl);
      const repoId = (await c.unary(`${SERVICE}/RegisterRepository`, RegisterRepositoryRequestSchema, RegisterRepositoryResponseSchema, { name: `bench-landing-${Date.now()}`, sourcePath: source })).repository!.id;
      const t: Record<"commit" | "merge" | "diff" | "rebase" | "gitCommit" | "gitDiff" | "gitRebase", number[]> = { commit: [], merge: [], diff: [], rebase: [], gitCommit: [], gitDiff: [], gitRebase: [] };
      let mineOnMain = 0;
      // main's files keep upstream 0: the rebase's commits are off main.
      const upstream = 0;
      /** Runs the pair back to back, Berth first in even rounds: both see the machine as it is in that second. */
      const pair = async (r: number, berthSide: () => Promise<number>, gitSide: () => number): Promise<[number, number]> => {
        if (r % 2 === 0) {
          const b = await berthSide();
          return [b, gitSide()];
        }
        const g = gitSide();
        return [await berthSide(), g];
      };
      for (let r = 0; r < ctx.rounds; r++) {
        const mine = 100 + r;
        const files = filesAt(mine, upstream, [mineOnMain, upstream]);
        // Set-up, not timed: the session's writes, and the same files in a checkout's working tree.
        const co = checkout(source);
        scratch.push(co);
        writeTree(co, files);
        const s = await openSession(c, repoId, `bench-lander-${r}`);
        await writeAll(c, s.sessionId, files);

        // DiffWorkspace against `git diff` (which hashes the working tree's files every time: the same work each try).
        for (let k = 0; k < DIFF_TRIES; k++) {
          const [b, g] = await pair(
            r + k,
            async () => {
              const [d, ms] = await timed(() => c.unary(`${SERVICE}/DiffWorkspace`, DiffWorkspaceRequestSchema, DiffWorkspaceResponseSchema, { sessionId: s.sessionId }, LONG));
              if (d.paths.length !== FILES) throw new Error(`DiffWorkspace answered ${d.paths.length} paths, not ${FILES}`);
              return ms;
            },
            () => timedSync(() => git(co, ["diff"]))[1],
          );
          t.diff.push(b);
          t.gitDiff.push(g);
        }
        // CommitChangeset against `git add -A && git commit`; then MERGED (the commit built again, main fast-forwarded).
        const [commitMs, gitCommitMs] = await pair(
          r,
          async () => {
            const [cm, ms] = await timed(() => c.unary(`${SERVICE}/CommitChangeset`, CommitChangesetRequestSchema, CommitChangesetResponseSchema, { changesetId: s.changesetId, message: `bench round ${r}` }, LONG));
            if (cm.paths !== FILES || cm.unchanged) throw new Error(`CommitChangeset: ${cm.paths} paths, unchanged ${cm.unchanged}`);
            return ms;
          },
          () =>
            timedSync(() => {
              git(co, ["add", "-A"]);
              git(co, ["commit", "-q", "-m", `bench round ${r}`]);
            })[1],
        );
        t.commit.push(commitMs);
        t.gitCommit.push(gitCommitMs);
        await approve(c, s.changesetId);
        const [, mergeMs] = await timed(() => c.unary(`${SERVICE}/TransitionChangeset`, TransitionChangesetRequestSchema, TransitionChangesetResponseSchema, { changesetId: s.changesetId, toState: ChangesetState.MERGED, targetRef: "main" }, LONG));
        t.merge.push(mergeMs);
        const last = (xs: number[]) => xs.slice(-DIFF_TRIES).map((x) => Math.round(x)).join("/");
        ctx.log(`round ${r}: DiffWorkspace ${last(t.diff)} ms vs git diff ${last(t.gitDiff)} ms; CommitChangeset ${Math.round(commitMs)} ms vs git add -A && git commit ${Math.round(gitCommitMs)} ms; MERGED ${Math.round(mergeMs)} ms`);
        mineOnMain = mine;

        // Rebase: a session's change of every file onto a commit that changed each elsewhere.
        const oldBase = git(source, ["rev-parse", "main"]);
        const sessionFiles = filesAt(200 + r, upstream, [mineOnMain, upstream]);
        git(source, ["checkout", "-q", "--detach", "main"]);
        const onto = commitFiles(source, filesAt(mineOnMain, upstream + 1, [0, 0]), `upstream ${r}`);
        const rs = await openSession(c, repoId, `bench-rebaser-${r}`, oldBase);
        await writeAll(c, rs.sessionId, sessionFiles);
        const rco = checkout(source, oldBase);
        scratch.push(rco);
        git(rco, ["checkout", "-q", "-b", "work"]);
        writeTree(rco, sessionFiles);
        git(rco, ["commit", "-q", "-am", "work"]);
        const [rebaseMs, gitRebaseMs] = await pair(
          r,
          async () => {
            const [rb, ms] = await timed(() => c.unary(`${SERVICE}/RebaseWorkspace`, RebaseWorkspaceRequestSchema, RebaseWorkspaceResponseSchema, { sessionId: rs.sessionId, onto }, LONG));
            if (rb.merged.length !== FILES || rb.conflicts.length !== 0) throw new Error(`RebaseWorkspace merged ${rb.merged.length}, conflicts ${rb.conflicts.length}`);
            return ms;
          },
          () => timedSync(() => git(rco, ["rebase", "-q", onto]))[1],
        );
        await destroy(c, rs.sessionId);
        t.rebase.push(rebaseMs);
        t.gitRebase.push(gitRebaseMs);
        ctx.log(`round ${r}: RebaseWorkspace ${Math.round(rebaseMs)} ms vs git rebase ${Math.round(gitRebaseMs)} ms`);
      }
      c.close();
      const ratio = (a: number[], b: number[]) => median(a.map((x, i) => x / b[i]!));
      const ms = (xs: number[]) => round(median(xs), 1);
      const commitRatio = ratio(t.commit, t.gitCommit);
      const mergeRatio = ratio(t.merge, t.gitCommit);
      const diffRatio = ratio(t.diff, t.gitDiff);
      const per = (xs: number[]) => xs.map((x) => Math.round(x)).join(" / ");
      return {
        rows: [
          {
            figure: `CommitChangeset of ${FILES.toLocaleString("en-US")} written 4 KiB files (PostgreSQL), median`,
            value: ms(t.commit),
            unit: "ms",
            baseline: { name: "`git add -A && git commit` of the same files in a checkout", value: ms(t.gitCommit), unit: "ms" },
            ratio: round(commitRatio, 2),
            target: `ratio ≤ ${COMMIT_RATIO}`,
            met: commitRatio <= COMMIT_RATIO,
            note: `per round ${per(t.commit)} ms vs git ${per(t.gitCommit)} ms`,
          },
          {
            figure: `MERGED of the same changeset (its commit built again under the transition, main fast-forwarded), median`,
            value: ms(t.merge),
            unit: "ms",
            baseline: { name: "`git add -A && git commit` of the same files in a checkout", value: ms(t.gitCommit), unit: "ms" },
            ratio: round(mergeRatio, 2),
            target: `ratio ≤ ${COMMIT_RATIO}`,
            met: mergeRatio <= COMMIT_RATIO,
            note: `per round ${per(t.merge)} ms`,
          },
          {
            figure: `DiffWorkspace of ${FILES.toLocaleString("en-US")} changed files, median`,
            value: ms(t.diff),
            unit: "ms",
            baseline: { name: "`git diff` of the same files in a checkout", value: ms(t.gitDiff), unit: "ms" },
            ratio: round(diffRatio, 2),
            target: `ratio ≤ ${DIFF_RATIO}`,
            met: diffRatio <= DIFF_RATIO,
            note: `per round ${per(t.diff)} ms vs git ${per(t.gitDiff)} ms`,
          },
          {
            figure: `RebaseWorkspace of ${FILES.toLocaleString("en-US")} changed files onto a commit that changed each of them elsewhere (clean three-way merges), median`,
            value: ms(t.rebase),
            unit: "ms",
            baseline: { name: "`git rebase` of a commit of the same files onto it, in a checkout", value: ms(t.gitRebase), unit: "ms" },
            ratio: round(ratio(t.rebase, t.gitRebase), 2),
            note: `per round ${per(t.rebase)} ms vs git ${per(t.gitRebase)} ms`,
          },
        ],
        commands: [
          berth.command,
          `fixture: git repository ${source} (${FILES} 4 KiB TypeScript modules, HEAD detached); per round a persistent session writes all ${FILES} (WriteFile, 16 in flight, not timed); git baselines in \`git clone --shared\` checkouts of it`,
        ],
        runs: {},
        extra: t,
      };
    } finally {
      await berth.stop();
      await db.drop();
      rmSync(source, { recursive: true, force: true });
      for (const d of scratch) rmSync(d, { recursive: true, force: true });
    }
  },
};

function timedSync<T>(fn: () => T): [T, number] {
  const t = performance.now();
  const r = fn();
  return [r, performance.now() - t];
}
