/**
 * berth run <session> -- <command> [args…]: one turn around any command (docs/agents.md, "berth
 * run"). BeginTurn; the command runs in the turn's environment (sandboxed: run-process.ts) while
 * TurnHeartbeat checks the turn is still current; its exit ends the turn (EndTurn), a steer or a
 * cancel from elsewhere stops it, Ctrl-C is passed on and, past the grace period, cancels the
 * turn. Its own failures exit with codes no command is given by run (RUN_EXIT), so a script can
 * tell "the agent failed" from "run could not run it".
 */
import { lstatSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { constants as osConstants } from "node:os";
import { type CommanderError, InvalidArgumentError, type Command } from "commander";
import { Code, ConnectError, ErrorInfoSchema, OnBusy, TurnOutcome, TurnState, type DiffWorkspaceResponse, type EndTurnResponse, type InstanceIdentity } from "@berth/client";
import { cliFor, type Cli } from "./client.js";
import { resolveId } from "./ids.js";
import { CliExit, UsageError, enumName, note, reportError } from "./output.js";
import { changesetComments, commentView } from "../mcp/tools.js";
import { RunningCommand, findProgram, type Exit } from "./run-process.js";
import { sandboxUnavailable, type SandboxPlan } from "../platform/sandbox.js";

/** `run`'s own exit codes, apart from the command's (as `timeout` and `env` keep theirs). */
export const RUN_EXIT = {
  /** The turn was superseded (a steer) or cancelled from elsewhere: the command was stopped. */
  stopped: 124,
  /** run itself failed: usage, the server, the sandbox, the environment not reachable, EndTurn. */
  failed: 125,
  /** The command was found but is not executable. */
  cannotExecute: 126,
  /** The command was not found. */
  notFound: 127,
} as const;

/** The marker the server writes in every environment (src/turns/environment.ts MARKER). */
const ENVIRONMENT_MARKER = ".berth-env";
/** Inside the sandbox, where the workspace map is shown (read-only, in the private /tmp). */
const MAP_INSIDE = "/tmp/berth-run/workspace-map.txt";
/** Inside the sandbox, where the changeset's open review comments are shown (read-only, beside the map). */
const COMMENTS_INSIDE = "/tmp/berth-run/comments.json";

interface RunOptions {
  readonly onBusy: OnBusy;
  readonly clientTurnId?: string;
  readonly sandbox: boolean;
  readonly network: boolean;
  readonly grace: number;
  readonly hide?: string[];
}

function parseOnBusy(raw: string): OnBusy {
  switch (raw.trim().toLowerCase()) {
    case "supersede":
      return OnBusy.SUPERSEDE;
    case "reject":
      return OnBusy.REJECT;
    default:
      throw new InvalidArgumentError("expected supersede or reject");
  }
}

function parseSeconds(raw: string): number {
  const n = Number(raw.trim());
  if (!/^\d+(\.\d+)?$/.test(raw.trim()) || n > 3600) throw new InvalidArgumentError("expected seconds (0 to 3600)");
  return n;
}

/**
 * How often TurnHeartbeat asks whether the turn is still current: a fifth of the session lease
 * (BERTH_SESSION_LEASE_MS, read as the server reads it; a running turn renews the lease
 * server-side, so this is not what keeps it), at most every 2 s so that a steer stops the
 * command within about 2 s.
 */
export function heartbeatIntervalMs(env: NodeJS.ProcessEnv = process.env): number {
  const lease = Number(env.BERTH_SESSION_LEASE_MS ?? "30000");
  return Math.min(2_000, Math.max(200, Number.isFinite(lease) && lease > 0 ? lease / 5 : 6_000));
}

/** Paths the sandbox hides besides the other environments: the server's data and credential files, as configured in this environment, and --hide. */
function hiddenPaths(env: NodeJS.ProcessEnv, extra: readonly string[]): string[] {
  const configured = ["BERTH_DATA_DIR", "BERTH_ENV_ROOT", "BERTH_AUTH_TOKENS_FILE", "BERTH_JWKS_FILE", "BERTH_TLS_KEY"].map((n) => env[n]?.trim()).filter((v): v is string => !!v);
  return [...(env.BERTH_DATA_DIR?.trim() ? [] : ["./.berth"]), ...configured, ...extra].map((p) => path.resolve(p));
}

/**
 * The object stores the environment's git borrows (.git/objects/info/alternates: the registered
 * repository's): git in the environment needs them, wherever they are (a repository under /tmp
 * is behind the private /tmp). The file is the agent's to edit, so bwrapArgs never shows one
 * under a hidden path.
 */
function borrowedObjects(envPath: string): string[] {
  let text: string;
  try {
    text = readFileSync(path.join(envPath, ".git/objects/info/alternates"), "utf8");
  } catch {
    return [];
  }
  return text.split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("#")).map((l) => path.resolve(envPath, ".git/objects", l));
}

const signalNumber = (s: NodeJS.Signals) => (osConstants.signals as Record<string, number>)[s] ?? 0;

/** The command's status as a shell gives it: its code, or 128 + the signal's number. */
function statusOf(exit: Exit): number {
  return exit.code ?? 128 + (exit.signal ? signalNumber(exit.signal) : 0);
}

function reasonOf(err: unknown): string {
  return err instanceof ConnectError ? (err.findDetails(ErrorInfoSchema)[0]?.reason ?? "") : "";
}

/** Reports a failure of run itself and returns the exit that ends it. */
function runFailed(cli: Cli | undefined, err: unknown): CliExit {
  reportError(err, cli?.serverUrl ?? "", cli?.json === true);
  return new CliExit(RUN_EXIT.failed);
}

export function registerRun(program: Command): void {
  program
    .command("run")
    .description("run a command as one turn of a session: in its environment, sandboxed (bubblewrap), heartbeating; its exit ends the turn (EndTurn), and run exits with its code")
    .argument("<session>", "the session id")
    .argument("<command...>", "the command and its arguments, after --")
    .option("--on-busy <what>", "when a turn is running: supersede (stop it; a steer) or reject (TURN_IN_PROGRESS)", parseOnBusy, OnBusy.SUPERSEDE)
    .option("--client-turn-id <id>", "your id for the turn: a retried run with the same id joins the same turn")
    .option("--grace <seconds>", "how long a stopped command has between SIGTERM (or your Ctrl-C) and SIGKILL", parseSeconds, 10)
    .option("--no-sandbox", "run the command unconfined, with your rights (no bubblewrap)")
    .option("--no-network", "cut the sandbox's network (default: on, agents call their model's API)")
    .option("--hide <path>", "also hide this file or directory in the sandbox (repeatable)", (v: string, prev: string[] | undefined) => [...(prev ?? []), v])
    // run's usage errors exit RUN_EXIT.failed, not 2: 2 may be the command's own code.
    .exitOverride((err: CommanderError) => {
      if (err.code === "commander.helpDisplayed" || err.code === "commander.help") throw err;
      throw new CliExit(RUN_EXIT.failed);
    })
    .action(async (sessionId: string, argv: string[], opts: RunOptions, command: Command) => {
      let cli: Cli | undefined;
      try {
        cli = cliFor(command);
      } catch (err) {
        throw err instanceof CliExit ? new CliExit(RUN_EXIT.failed) : err;
      }
      // A session id's first characters name it as for every command; run's own failures exit 125.
      const session = await resolveId(cli, "session", sessionId).catch((err: unknown) => {
        throw err instanceof CliExit ? new CliExit(RUN_EXIT.failed) : err;
      });
      await runTurn(cli, session, argv, opts);
    });
}

const SIGNALS: NodeJS.Signals[] = ["SIGINT", "SIGTERM", "SIGHUP"];

/**
 * From the start, a signal is noted rather than fatal: one that arrives while BeginTurn is in
 * flight would otherwise leave a RUNNING turn behind with no command and nobody to end it.
 */
async function runTurn(cli: Cli, sessionId: string, argv: string[], opts: RunOptions): Promise<void> {
  let early: NodeJS.Signals | undefined;
  const onEarly = (signal: NodeJS.Signals) => void (early ??= signal);
  for (const s of SIGNALS) process.on(s, onEarly);
  try {
    await runCommandTurn(cli, sessionId, argv, opts, () => early);
  } finally {
    for (const s of SIGNALS) process.off(s, onEarly);
  }
}

async function runCommandTurn(cli: Cli, sessionId: string, argv: string[], opts: RunOptions, earlySignal: () => NodeJS.Signals | undefined): Promise<void> {
  const [program, ...args] = argv as [string, ...string[]];
  const sandbox = opts.sandbox;
  // Refusals that need no turn come before BeginTurn: nothing is superseded for a typo.
  if (sandbox) {
    const why = sandboxUnavailable();
    if (why) throw runFailed(cli, new UsageError(`cannot sandbox the command: ${why}; pass --no-sandbox to run it unconfined, with your rights`));
  }
  if (!program.includes("/") || path.isAbsolute(program)) refuseMissing(cli, program, process.cwd(), sandbox);

  // require_environment_path: a caller who would not be shown the directory is refused before
  // anything begins (a server without the field begins the turn, and it is cancelled below).
  const begun = await cli.turns.beginTurn({ sessionId, clientTurnId: opts.clientTurnId ?? "", onBusy: opts.onBusy, requireEnvironmentPath: true }).catch((err: unknown) => {
    if (reasonOf(err) === "ROLE_REQUIRED") throw runFailed(cli, new UsageError(`${NEEDS_ADMIN}; nothing began`));
    throw runFailed(cli, err);
  });
  const turnId = begun.turnId;
  const envPath = begun.environmentPath;
  // From here a turn runs: every way out ends it.
  const unreachable = environmentUnreachable(envPath, begun.environmentInstance);
  if (unreachable) {
    await cancelQuietly(cli, turnId);
    throw runFailed(cli, new UsageError(`${unreachable}; the turn ${turnId} was cancelled, nothing ran`));
  }
  try {
    if (program.includes("/") && !path.isAbsolute(program)) refuseMissing(cli, program, envPath, sandbox);
  } catch (err) {
    await cancelQuietly(cli, turnId);
    throw err;
  }
  const ws = await cli.workspaces.getWorkspace({ sessionId }).catch(async (err: unknown) => {
    await cancelQuietly(cli, turnId);
    throw runFailed(cli, err);
  });

  const changesetId = ws.workspace?.changesetId ?? "";
  const comments = await openComments(cli, changesetId).catch(async (err: unknown) => {
    await cancelQuietly(cli, turnId);
    throw runFailed(cli, err);
  });

  const early = earlySignal();
  if (early) {
    await cancelQuietly(cli, turnId);
    note(`${early} before the command started: the turn ${turnId} was cancelled, nothing ran`);
    throw new CliExit(128 + signalNumber(early));
  }

  // The workspace map: a file outside the environment (never captured), named by BERTH_WORKSPACE_MAP.
  const scratch = mkdtempSync(path.join(tmpdir(), "berth-run-"));
  const mapFile = path.join(scratch, "workspace-map.txt");
  writeFileSync(mapFile, begun.workspaceMap?.text ?? "");
  // The open review comments, the same way: what the reviewers asked of this changeset (BERTH_COMMENTS).
  const commentsFile = path.join(scratch, "comments.json");
  writeFileSync(commentsFile, `${JSON.stringify({ changeset_id: changesetId, ...comments }, null, 2)}\n`);
  const files = [{ host: mapFile, inside: MAP_INSIDE }, { host: commentsFile, inside: COMMENTS_INSIDE }];
  const plan: SandboxPlan | undefined = sandbox
    ? { writable: envPath, hide: [path.dirname(envPath), ...hiddenPaths(process.env, opts.hide ?? [])], readable: borrowedObjects(envPath), files, network: opts.network }
    : undefined;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    BERTH_SERVER: cli.serverUrl,
    BERTH_SESSION_ID: sessionId,
    BERTH_TURN_ID: turnId,
    BERTH_CHANGESET_ID: changesetId,
    BERTH_ENVIRONMENT: envPath,
    BERTH_WORKSPACE_MAP: sandbox ? MAP_INSIDE : mapFile,
    BERTH_COMMENTS: sandbox ? COMMENTS_INSIDE : commentsFile,
  };
  if (!cli.json) note(`turn ${turnId} in ${envPath}${begun.warm ? " (warm)" : ""}${begun.supersededTurnId ? `, superseding ${begun.supersededTurnId}` : ""}${sandbox ? "" : " (no sandbox)"}`);

  let running: RunningCommand;
  try {
    running = new RunningCommand({ command: program, args, cwd: envPath, env, ...(plan ? { sandbox: plan } : {}) });
  } catch (err) {
    rmSync(scratch, { recursive: true, force: true });
    await cancelQuietly(cli, turnId);
    throw runFailed(cli, err);
  }
  const graceMs = opts.grace * 1000;
  /** Why run stops the command: the turn stopped elsewhere, or a signal run received. */
  let stoppedBecause: string | undefined;
  let interrupted: NodeJS.Signals | undefined;
  let killedAfterGrace = false;
  let killTimer: NodeJS.Timeout | undefined;
  const send = (signal: NodeJS.Signals) => void running.signal(signal).catch((err: unknown) => note(`sending ${signal} to the command failed: ${err instanceof Error ? err.message : String(err)}`));
  /** The command gets `first` (unless undefined: it already has it), then SIGKILL after the grace period. */
  const stop = (first: NodeJS.Signals | undefined) => {
    if (first) send(first);
    killTimer ??= setTimeout(() => {
      killedAfterGrace = true;
      send("SIGKILL");
    }, graceMs);
  };

  // Heartbeats: the turn is still the session's current one, or the command stops.
  const heartbeatMs = heartbeatIntervalMs();
  let beating = true;
  const heartbeats = (async () => {
    let warned = false;
    while (beating) {
      await new Promise((r) => setTimeout(r, heartbeatMs));
      if (!beating) return;
      let current: boolean;
      try {
        current = (await cli.turns.turnHeartbeat({ turnId })).current;
      } catch (err) {
        if (reasonOf(err) !== "TURN_NOT_RUNNING") {
          // A lost heartbeat is not a stopped turn: say so once and keep asking.
          if (!warned) note(`a turn heartbeat failed (${err instanceof Error ? err.message : String(err)}); still trying`);
          warned = true;
          continue;
        }
        current = false;
      }
      if (current || !beating) continue;
      stoppedBecause = await whyStopped(cli, sessionId, turnId);
      note(`the turn ${turnId} was ${stoppedBecause}: stopping the command (SIGTERM, SIGKILL after ${opts.grace}s)`);
      stop("SIGTERM");
      return;
    }
  })();

  const onSignal = (signal: NodeJS.Signals) => {
    interrupted ??= signal;
    // With a terminal, Ctrl-C already reached the command (it is in the terminal's foreground
    // process group): a second SIGINT would read as a double Ctrl-C to many agents.
    stop(signal === "SIGINT" && process.stdin.isTTY ? undefined : signal);
  };
  for (const s of SIGNALS) process.on(s, onSignal);
  // A signal that came while the command was being started.
  const meanwhile = earlySignal();
  if (meanwhile) onSignal(meanwhile);

  let exit: Exit;
  try {
    exit = await running.exited;
  } catch (err) {
    exit = { code: (err as NodeJS.ErrnoException).code === "ENOENT" ? RUN_EXIT.notFound : RUN_EXIT.cannotExecute, signal: null };
    note(`cannot run ${program}: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    beating = false;
    if (killTimer) clearTimeout(killTimer);
    rmSync(scratch, { recursive: true, force: true });
  }
  await heartbeats;
  for (const s of SIGNALS) process.off(s, onSignal);
  const status = statusOf(exit);

  if (stoppedBecause) {
    // The server captured the environment when it stopped the turn (supersede, cancel).
    summary(cli, { turnId, stoppedBecause, exitCode: status });
    throw new CliExit(RUN_EXIT.stopped);
  }
  if (interrupted && killedAfterGrace) {
    // It outlived the grace period and was killed: the user asked to abandon the turn.
    const settled = await cancelAndSettle(cli, turnId).catch((err: unknown) => {
      throw runFailed(cli, err);
    });
    const diff = await cli.workspaces.diffWorkspace({ sessionId }).catch(() => undefined);
    summary(cli, { turnId, cancelled: `${interrupted}, then SIGKILL after ${opts.grace}s`, settled, exitCode: status, ...(diff ? { diff } : {}) });
    throw new CliExit(128 + signalNumber(interrupted));
  }
  const outcome = status === 0 ? TurnOutcome.COMPLETED : TurnOutcome.FAILED;
  const ended = await cli.turns.endTurn({ turnId, outcome, ...exitFields(exit, sandbox) }).catch(async (err: unknown) => {
    if (reasonOf(err) === "TURN_NOT_RUNNING") {
      // Stopped elsewhere between the last heartbeat and the command's exit: captured by whoever stopped it.
      summary(cli, { turnId, stoppedBecause: await whyStopped(cli, sessionId, turnId), exitCode: status });
      throw new CliExit(RUN_EXIT.stopped);
    }
    if (reasonOf(err) === "CAPTURE_INCOMPLETE") note(`the turn ${turnId} is still running: resolve what capture refused, then \`berth turn end ${turnId}\``);
    throw runFailed(cli, err);
  });
  const diff = await cli.workspaces.diffWorkspace({ sessionId }).catch(() => undefined);
  summary(cli, { turnId, ended, exitCode: status, ...(diff ? { diff } : {}) });
  if (status !== 0) throw new CliExit(status);
}

/** Exit 127 (not found) or 126 (not executable), before anything starts. */
function refuseMissing(cli: Cli, program: string, cwd: string, sandbox: boolean): void {
  const found = findProgram(program, cwd, process.env);
  if (found?.executable && sandbox && (found.path === "/tmp" || found.path.startsWith("/tmp/"))) {
    reportError(new UsageError(`${found.path} is under /tmp, which the sandbox replaces with a private one: put the program elsewhere, or pass --no-sandbox`), cli.serverUrl, cli.json);
    throw new CliExit(RUN_EXIT.notFound);
  }
  if (found?.executable) return;
  reportError(new UsageError(found ? `${found.path} is not executable` : `${program}: command not found`), cli.serverUrl, cli.json);
  throw new CliExit(found ? RUN_EXIT.cannotExecute : RUN_EXIT.notFound);
}

/** Why run refuses a caller who is not shown environment paths. */
/**
 * The changeset's open review comments as the command is given them (the list_comments tool's
 * form). A server older than review comments has none to give: the command gets an empty list.
 */
async function openComments(cli: Cli, changesetId: string): Promise<{ comments: Record<string, unknown>[]; more?: true }> {
  if (changesetId === "") return { comments: [] };
  try {
    const { comments, more } = await changesetComments(cli.workspaces, {}, changesetId, false);
    return { comments: comments.map(commentView), ...(more ? { more: true as const } : {}) };
  } catch (err) {
    if (err instanceof ConnectError && err.code === Code.Unimplemented) return { comments: [] };
    throw err;
  }
}

const NEEDS_ADMIN = "berth run needs an admin token (BERTH_TOKEN naming a token with the admin role): the server shows a turn's environment directory to admins only, and the command must run in it";

/**
 * Why the environment cannot be used from here, or undefined when it can: the directory must
 * exist on this machine and hold the marker the server writes in every environment — a client
 * on another host, or an instance whose disk this is not, finds no such directory. `holder`:
 * the instance whose disk it is, as BeginTurn names it (a server that does not, says nothing).
 */
export function environmentUnreachable(envPath: string, holder?: InstanceIdentity): string | undefined {
  if (!envPath) return `the server did not say where the turn's environment is: ${NEEDS_ADMIN}`;
  try {
    if (!lstatSync(envPath).isDirectory() || !lstatSync(path.join(envPath, ENVIRONMENT_MARKER)).isFile()) throw new Error("not an environment");
  } catch {
    if (!holder?.instanceId) {
      return `the environment ${envPath} is a directory on the disk of the Berth instance that began the turn, and it is not reachable here; run \`berth run\` on that instance's host (with --server naming that instance)`;
    }
    const name = holder.instanceName ? `"${holder.instanceName}"` : holder.instanceId;
    const known = [`id ${holder.instanceId}`, ...(holder.advertiseAddress ? [`gRPC at ${holder.advertiseAddress}`] : [])].join(", ");
    return `the environment ${envPath} is on the disk of Berth instance ${name} (${known}), and it is not reachable here (another host, or another instance's disk); run \`berth run\` on that instance's host, with --server naming a Berth HTTP address there (a turn RPC reaching another instance is forwarded to it)`;
  }
  return undefined;
}

/** The signal whose number is `n` (the first name of it: SIGABRT, not SIGIOT). */
function signalNamed(n: number): string | undefined {
  return Object.entries(osConstants.signals as Record<string, number>).find(([, v]) => v === n)?.[0];
}

/**
 * How the command ended, for EndTurn to record with the turn: its exit status, or the signal that
 * killed it. Under the sandbox bwrap (the command's parent) reports a signal death as 128 + the
 * signal's number, as a shell does, so the two cannot be told apart there: a status of 129 to
 * 128 + the highest signal number is recorded as that signal (docs/agents.md, "Exit codes").
 */
export function exitFields(exit: Exit, sandboxed: boolean): { exitCode?: number; exitSignal?: string } {
  if (exit.signal) return { exitSignal: exit.signal };
  if (exit.code === null) return {};
  const folded = sandboxed && exit.code > 128 ? signalNamed(exit.code - 128) : undefined;
  return folded ? { exitSignal: folded } : { exitCode: exit.code };
}

async function cancelQuietly(cli: Cli, turnId: string): Promise<void> {
  await cli.turns.cancelTurn({ turnId }).catch((err: unknown) => note(`cancelling the turn ${turnId} failed: ${err instanceof Error ? err.message : String(err)}`));
}

/** CancelTurn, then again until its teardown — which captures the environment — has finished (at most 60 s). */
async function cancelAndSettle(cli: Cli, turnId: string): Promise<boolean> {
  const deadline = Date.now() + 60_000;
  for (let res = await cli.turns.cancelTurn({ turnId }); ; res = await cli.turns.cancelTurn({ turnId })) {
    if (res.settled) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function whyStopped(cli: Cli, sessionId: string, turnId: string): Promise<string> {
  const page = await cli.turns.listTurns({ sessionId }).catch(() => undefined);
  const turn = page?.turns.find((t) => t.turnId === turnId);
  if (turn?.state === TurnState.SUPERSEDED) return "superseded by another turn (a steer)";
  if (turn?.state === TurnState.CANCELLED) return "cancelled";
  return turn ? `no longer current (${enumName(TurnState, turn.state, "TURN_STATE_").toLowerCase()})` : "no longer current";
}

interface Summary {
  readonly turnId: string;
  readonly exitCode: number;
  readonly ended?: EndTurnResponse;
  readonly stoppedBecause?: string;
  readonly cancelled?: string;
  readonly settled?: boolean;
  readonly diff?: DiffWorkspaceResponse;
}

/**
 * The turn's summary, on stderr (stdout is the command's): how it ended, what capture took and
 * left out, the workspace's diff stat. With --json, one JSON object.
 */
function summary(cli: Cli, s: Summary): void {
  const outcome = s.ended ? enumName(TurnOutcome, s.ended.turn?.outcome ?? TurnOutcome.UNSPECIFIED, "TURN_OUTCOME_").toLowerCase() : s.stoppedBecause ? "stopped" : "cancelled";
  const stat = (s.diff?.paths ?? []).map((p) => ({ path: p.path, added: p.linesAdded, removed: p.linesRemoved, binary: p.binary }));
  if (cli.json) {
    const line = {
      turnId: s.turnId,
      outcome,
      exitCode: s.exitCode,
      ...(s.ended?.turn?.exitSignal ? { exitSignal: s.ended.turn.exitSignal } : {}),
      ...(s.stoppedBecause ? { stopped: s.stoppedBecause } : {}),
      ...(s.cancelled ? { cancelled: s.cancelled, settled: s.settled } : {}),
      capturedPaths: s.ended?.capturedPaths ?? [],
      leftOut: (s.ended?.leftOut ?? []).map((l) => ({ path: l.path, reason: l.reason })),
      diffStat: stat,
    };
    process.stderr.write(`${JSON.stringify(line)}\n`);
    return;
  }
  const signal = s.ended?.turn?.exitSignal;
  const lines = [`turn ${s.turnId}: ${outcome} (exit ${s.exitCode}${signal ? `, ${signal}` : ""})${s.stoppedBecause ? `: ${s.stoppedBecause}` : ""}${s.cancelled ? `: interrupted (${s.cancelled})${s.settled === false ? "; its capture is still running on the server" : ""}` : ""}`];
  if (s.ended) {
    lines.push(`  captured: ${s.ended.capturedPaths.length ? s.ended.capturedPaths.join(", ") : "nothing"}`);
    if (s.ended.leftOut.length) lines.push(`  left out: ${s.ended.leftOut.map((l) => `${l.path} (${l.reason})`).join(", ")}`);
  }
  if (s.diff) {
    lines.push(`  workspace diff: ${stat.length} path(s)`);
    for (const p of stat) lines.push(`    ${p.binary ? "bin" : `+${p.added} -${p.removed}`}\t${p.path}`);
  }
  process.stderr.write(`${lines.join("\n")}\n`);
}
