/**
 * A repository's check on VERIFYING (docs/landing-work.md, "Checks on VERIFYING"). The order
 * between PostgreSQL and the process is what makes a crash harmless:
 *
 * - start: the move hook inserts the verification RUNNING, owned by this incarnation, in the
 *   transaction that moves the changeset to VERIFYING (with `verification.started`). Only after
 *   the commit does the follower (this class, hearing its own event) build the tree and start the
 *   command: a rolled-back transition starts nothing.
 * - end: the verification is finished by compare-and-set on its RUNNING state inside the
 *   transaction that moves the changeset out of VERIFYING (APPROVED on exit 0, SUBMITTED
 *   otherwise), with `verification.finished`. A changeset that left VERIFYING meanwhile (closed,
 *   moved by hand) only gets its verification finished. A newer run of the same changeset
 *   supersedes an older one (finished ERROR when the newer starts): the older's end moves nothing.
 * - crash: a RUNNING verification whose instance is gone (an earlier incarnation of this one, an
 *   instance stopped or silent, by the database's clock) is finished ERROR by the sweep of any
 *   live instance, at start and periodically, as turns are (turns/store.ts failOrphanedTurns),
 *   and its changeset goes back to SUBMITTED: never VERIFYING for ever.
 *
 * The command runs in a fresh directory under the data directory holding the changeset's commit
 * (checked out, then its .git removed: the check sees the tree, not the source repository), under
 * platform/sandbox.ts's bwrap as berth run's agent does, without network, with the server's
 * environment withheld, and killed (its process group) at the timeout.
 */
import { mkdir, rm } from "node:fs/promises";
import path from "node:path";
import type { Logger } from "pino";
import type { Clock } from "../platform/clock.js";
import { BerthError } from "../platform/errors.js";
import type { CommittedEvent } from "../platform/outbox.js";
import { verificationStateEnum } from "../platform/proto-enums.js";
import { runConfined, sandboxUnavailable, type SandboxPlan } from "../platform/sandbox.js";
import type { VerificationStateName } from "../platform/schema.js";
import type { Change, CommitFollower } from "../platform/unit-of-work.js";
import type { Landing } from "../overlay/landing.js";
import type { WorkspaceRegistry } from "../sessions/registry.js";
import { DEFAULT_CHECK_TIMEOUT_SECONDS } from "../sessions/repositories.js";
import { checkoutBase } from "../turns/env-git.js";
import * as repo from "./verifications.repository.js";

/** What the record keeps of a run's output: its last bytes. */
export const OUTPUT_TAIL_BYTES = 16 * 1024;
/** One verification.output event carries at most this much. */
const CHUNK_BYTES = 4 * 1024;
/** A run's output streamed as events stops past this (the tail is still kept): the event log is not a log store. */
const STREAMED_BYTES = 256 * 1024;
/** Output is gathered this long before an event carries it: a chatty check is not an event per write. */
const FLUSH_MS = 200;

export interface VerifierDeps {
  readonly registry: WorkspaceRegistry;
  readonly landing: Landing;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Where runs' directories are made (under the data directory), in a folder per instance name, emptied of its previous incarnation's leftovers at start. */
  readonly root: string;
  /** Paths the check must not see (the data directory, the turn environments' root). */
  readonly hide: readonly string[];
  /** This incarnation (instances.id) and its stable name, known once the port is bound. */
  readonly instance: { readonly id: string; readonly name?: string | undefined; readonly staleAfterMs: number };
  /** How often RUNNING verifications of dead instances are looked for (0: only at start). */
  readonly sweepIntervalMs: number;
}

/** How a run ended, before it is recorded. */
interface Outcome {
  readonly state: Exclude<VerificationStateName, "running">;
  readonly exitCode: number | null;
  readonly reason: string;
  readonly tail: string;
}

class Superseded extends Error {}

export class Verifier implements CommitFollower {
  /** Runs this process has started and not yet recorded, by verification id (to kill them at stop). */
  private readonly running = new Map<string, { kill(): void }>();
  private sweepTimer: NodeJS.Timeout | undefined;
  private stopping = false;
  /** This instance's folder of run directories: another instance sharing the data directory has its own. */
  private workDir: string;
  /**
   * Whether bwrap can build a sandbox here, probed once per process: the probe is a synchronous
   * spawn, which would hold the event loop (every other call) at each check's start.
   */
  private sandboxProbe: { readonly unavailable: string | undefined } | undefined;

  constructor(private readonly deps: VerifierDeps) {
    this.workDir = path.join(deps.root, deps.instance.id);
    deps.registry.hooks.onChangesetMove((change, move) => (move.to === "verifying" ? this.begin(change, move.changesetId, move.at) : Promise.resolve()));
    deps.registry.uow.addFollower("verifications", this);
  }

  private get db() {
    return this.deps.registry.db;
  }

  /** In the transaction moving the changeset to VERIFYING: its verification, when its repository has a check. */
  private async begin(change: Change, changesetId: string, at: number): Promise<void> {
    const check = await repo.checkOfChangeset(change.trx, changesetId);
    if (!check) return; // no check: VERIFYING is only a state
    const id = this.deps.registry.mintId();
    const timeoutSeconds = check.timeout_seconds || DEFAULT_CHECK_TIMEOUT_SECONDS;
    await repo.insertVerification(change.trx, {
      id,
      changeset_id: changesetId,
      repo_id: check.repo_id,
      argv: check.argv,
      timeout_seconds: timeoutSeconds,
      started_at: new Date(at),
      instance_id: this.deps.instance.id,
    });
    for (const older of await repo.runningOfChangeset(change.trx, changesetId, id)) {
      const row = await repo.finishVerification(change.trx, older.id, { state: "error", exit_code: null, reason: `superseded by ${id}`, output_tail: older.output_tail, finished_at: new Date(at) });
      if (row) change.record(finishedEvent(row, at));
    }
    change.record({
      kind: "verification.started",
      repoId: check.repo_id,
      changesetId,
      occurredAt: at,
      payload: { case: "verificationStarted", value: { verificationId: id, check: { argv: check.argv, timeoutSeconds } } },
    });
  }

  /** Committed events: this incarnation's own verification.started is the signal to run it. */
  apply(event: CommittedEvent): void {
    if (event.kind !== "verification.started" || this.stopping) return;
    this.runMine(event.changesetId);
  }

  /** Events may have been missed: whatever RUNNING verification is ours and not running here starts now. */
  async resync(): Promise<void> {
    this.runMine(undefined);
  }

  private runMine(changesetId: string | undefined): void {
    repo.runningHere(this.db, this.deps.instance.id, changesetId).then(
      (rows) => {
        for (const row of rows) if (!this.running.has(row.id) && !this.stopping) this.launch(row);
      },
      (err: unknown) => this.deps.logger.warn({ err, changesetId }, "verifications: could not read the runs to start; the sweep finishes them once this instance is gone"),
    );
  }

  /** Starts a run and records its end; every failure becomes an ERROR verification, never a VERIFYING left behind. */
  private launch(row: repo.VerificationRow): void {
    const handle = { killed: false, kill: () => {} };
    this.running.set(row.id, {
      kill: () => {
        handle.killed = true;
        handle.kill();
      },
    });
    this.execute(row, handle)
      .catch((err: unknown): Outcome => {
        this.deps.logger.warn({ err, verificationId: row.id, changesetId: row.changeset_id }, "verifications: the check could not run");
        return { state: "error", exitCode: null, reason: `error: ${err instanceof Error ? err.message : String(err)}`.slice(0, 1024), tail: "" };
      })
      .then((outcome) => this.finish(row, outcome))
      .catch((err: unknown) => this.deps.logger.error({ err, verificationId: row.id }, "verifications: the end of a check was not recorded; the sweep finishes it once this instance is gone"))
      .finally(() => this.running.delete(row.id));
  }

  private async execute(row: repo.VerificationRow, handle: { killed: boolean; kill: () => void }): Promise<Outcome> {
    const unavailable = (this.sandboxProbe ??= { unavailable: sandboxUnavailable() }).unavailable;
    if (unavailable) return { state: "error", exitCode: null, reason: `no sandbox: ${unavailable}`, tail: "" };
    const agents = await this.deps.registry.agentsOfChangeset(row.changeset_id);
    const { commit, gitDir } = await this.deps.landing.commitForCheck(row.changeset_id, agents[0] ?? "berth");
    await repo.recordCommit(this.db, row.id, commit);
    const dir = path.join(this.workDir, row.id);
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    try {
      await checkoutBase(gitDir, commit, dir, ".berth-check");
      // The tree only: the checkout's .git borrows the source repository's objects, which the check has no business reading.
      await rm(path.join(dir, ".git"), { recursive: true, force: true });
      if (handle.killed) return { state: "error", exitCode: null, reason: "server_stopping", tail: "" };
      const output = new OutputStream(row, this.deps);
      const plan: SandboxPlan = { writable: dir, hide: [this.deps.root, ...this.deps.hide, gitDir], readable: [], files: [], network: false };
      const [program, ...args] = row.argv as [string, ...string[]];
      const run = runConfined({
        argv: [program, ...args],
        plan,
        cwd: dir,
        env: {
          PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
          HOME: dir,
          LANG: "C.UTF-8",
          BERTH_CHANGESET_ID: row.changeset_id,
          BERTH_VERIFICATION_ID: row.id,
          BERTH_COMMIT: commit,
        },
        timeoutMs: row.timeout_seconds * 1000,
        onOutput: (chunk) => output.push(chunk),
      });
      handle.kill = run.kill;
      if (handle.killed) run.kill();
      const exit = await run.exited;
      await output.close();
      const tail = output.tail();
      if (handle.killed) return { state: "error", exitCode: null, reason: "server_stopping", tail };
      if (exit.timedOut) return { state: "failed", exitCode: null, reason: `timeout after ${row.timeout_seconds}s`, tail };
      if (exit.code === 0) return { state: "passed", exitCode: 0, reason: "exit 0", tail };
      if (exit.code !== null) return { state: "failed", exitCode: exit.code, reason: `exit ${exit.code}`, tail };
      return { state: "error", exitCode: null, reason: `the sandbox died (${exit.signal ?? "no status"})`, tail };
    } finally {
      await rm(dir, { recursive: true, force: true }).catch((err: unknown) => this.deps.logger.warn({ err, dir }, "verifications: a run's directory was not removed"));
    }
  }

  /**
   * Records the end: the verification finished and the changeset moved out of VERIFYING in one
   * transaction (APPROVED when it passed, SUBMITTED otherwise, reason saying why); when the
   * changeset is no longer VERIFYING, the verification alone.
   */
  async finish(row: Pick<repo.VerificationRow, "id" | "changeset_id" | "repo_id">, outcome: Outcome): Promise<void> {
    const at = this.deps.clock.now();
    const end = { state: outcome.state, exit_code: outcome.exitCode, reason: outcome.reason, output_tail: outcome.tail, finished_at: new Date(at) };
    const to = outcome.state === "passed" ? "approved" : "submitted";
    const why = `berth: verification ${row.id} ${outcome.state === "passed" ? "passed" : outcome.state === "failed" ? "failed" : "could not finish"}: ${outcome.reason}`.slice(0, 1024);
    const record = async (change: Change) => {
      const done = await repo.finishVerification(change.trx, row.id, end);
      if (!done) throw new Superseded();
      change.record(finishedEvent(done, at));
    };
    // Said, because nothing else is: the run was already finished (by the sweep, say) and keeps that end.
    const superseded = () => this.deps.logger.info({ verificationId: row.id, changesetId: row.changeset_id, outcome: outcome.state }, "verifications: this check ended after its run was finished elsewhere; its end is not recorded");
    try {
      const moved = await this.deps.registry.moveChangeset(row.changeset_id, to, why, { expected: "verifying", during: record });
      if (!moved.unchanged) return;
    } catch (err) {
      if (err instanceof Superseded) return superseded();
      if (!(err instanceof BerthError) || (err.reason !== "STATE_MISMATCH" && err.reason !== "CHANGESET_TERMINAL")) throw err;
    }
    // The changeset left VERIFYING by another way: only the verification ends.
    await this.deps.registry.uow.run(record).catch((err: unknown) => {
      if (!(err instanceof Superseded)) throw err;
      superseded();
    });
  }

  /** At start (before serving) and then periodically: RUNNING verifications nobody runs any more end as ERROR. */
  async start(): Promise<void> {
    this.workDir = path.join(this.deps.root, (this.deps.instance.name ?? this.deps.instance.id).replace(/[^A-Za-z0-9._-]/g, "_"));
    // Runs of an earlier incarnation of this instance (same name) are dead: their directories go.
    await rm(this.workDir, { recursive: true, force: true });
    await mkdir(this.workDir, { recursive: true });
    await this.sweep();
    if (this.deps.sweepIntervalMs > 0) {
      this.sweepTimer = setInterval(() => {
        this.sweep().catch((err: unknown) => this.deps.logger.warn({ err }, "verifications: the sweep failed"));
      }, this.deps.sweepIntervalMs);
      this.sweepTimer.unref();
    }
  }

  private async sweep(): Promise<void> {
    const { id, name, staleAfterMs } = this.deps.instance;
    for (const row of await repo.orphaned(this.db, id, name, staleAfterMs)) {
      this.deps.logger.warn({ verificationId: row.id, changesetId: row.changeset_id, instance: row.instance_id }, "verifications: the instance running this check is gone; ERROR, changeset back to SUBMITTED");
      await this.finish(row, { state: "error", exitCode: null, reason: "instance_lost", tail: row.output_tail });
    }
  }

  /** Kills this process's runs; each is recorded ERROR (server_stopping) and its changeset goes back to SUBMITTED. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    for (const r of this.running.values()) r.kill();
    const deadline = Date.now() + 10_000;
    while (this.running.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  }

  /** A changeset's verifications, oldest first (the last 100). */
  list(changesetId: string): Promise<(repo.VerificationRow & { instance_name: string | null })[]> {
    return repo.listOfChangeset(this.db, changesetId, 100);
  }
}

function finishedEvent(row: repo.VerificationRow, at: number) {
  return {
    kind: "verification.finished",
    repoId: row.repo_id,
    changesetId: row.changeset_id,
    occurredAt: at,
    reason: row.reason,
    payload: {
      case: "verificationFinished" as const,
      value: { verificationId: row.id, state: verificationStateEnum(row.state), ...(row.exit_code === null ? {} : { exitCode: row.exit_code }), outputTail: row.output_tail },
    },
  };
}

/**
 * A run's output: streamed as verification.output events (in order, gathered for FLUSH_MS, at
 * most CHUNK_BYTES each, STREAMED_BYTES in all) and its last OUTPUT_TAIL_BYTES kept for the record.
 */
class OutputStream {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private streamed = 0;
  private last: Buffer = Buffer.alloc(0);
  private timer: NodeJS.Timeout | undefined;
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly row: repo.VerificationRow,
    private readonly deps: VerifierDeps,
  ) {}

  push(chunk: Buffer): void {
    const joined = Buffer.concat([this.last, chunk]);
    this.last = joined.subarray(Math.max(0, joined.length - OUTPUT_TAIL_BYTES));
    if (this.streamed + this.pendingBytes >= STREAMED_BYTES) return;
    const room = STREAMED_BYTES - this.streamed - this.pendingBytes;
    const kept = chunk.subarray(0, room);
    this.pending.push(kept);
    this.pendingBytes += kept.length;
    this.timer ??= setTimeout(() => this.flush(), FLUSH_MS);
  }

  private flush(): void {
    this.timer = undefined;
    if (this.pendingBytes === 0) return;
    const all = Buffer.concat(this.pending);
    this.pending = [];
    this.pendingBytes = 0;
    const chunks: { offset: number; bytes: Buffer }[] = [];
    for (let at = 0; at < all.length; at += CHUNK_BYTES) chunks.push({ offset: this.streamed + at, bytes: all.subarray(at, at + CHUNK_BYTES) });
    this.streamed += all.length;
    const now = this.deps.clock.now();
    this.chain = this.chain
      .then(() =>
        this.deps.registry.uow.run(async (change) => {
          change.record(
            ...chunks.map((c) => ({
              kind: "verification.output",
              repoId: this.row.repo_id,
              changesetId: this.row.changeset_id,
              occurredAt: now,
              payload: { case: "verificationOutput" as const, value: { verificationId: this.row.id, chunk: c.bytes, offset: BigInt(c.offset) } },
            })),
          );
        }),
      )
      .catch((err: unknown) => this.deps.logger.warn({ err, verificationId: this.row.id }, "verifications: output not streamed (the record keeps its tail)"));
  }

  /** Sends what is pending; resolves once every event is stored. */
  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.flush();
    await this.chain;
  }

  /** The last bytes, as text (a multi-byte character cut at the start shows as U+FFFD, a NUL is dropped). */
  tail(): string {
    // PostgreSQL's text holds no NUL.
    return this.last.toString("utf8").replaceAll("\u0000", "");
  }
}
