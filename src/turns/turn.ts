/**
 * The in-memory turn. Every turn module reads and writes these fields, so they live apart from
 * the scheduler that drives them; the scheduler is the only one that changes `state`.
 *
 * A turn read back from the database (another incarnation's, or one forgotten since) was not
 * started by this process: it has no `started` promise and is already settled.
 */
import { randomUUID } from "node:crypto";
import type { Workspace } from "../sessions/workspace.js";
import type { Environment } from "./environment.js";
import type { MapResult } from "./map/index.js";
import type { OutcomeName, TurnStateName } from "./store.js";

export type OnBusyName = "supersede" | "reject";

/** Why capture left a path out (LeftOutPath.reason in proto/berth/v1/turn_service.proto says what each means). */
export type LeftOutReason = "gitignored" | "excluded" | "too_large" | "git_directory" | "symlink" | "special_file" | "hardlink" | "submodule";

/**
 * How the turn's command ended, as the client that ended the turn reported it (EndTurn): its exit
 * status, or the signal that killed it; neither when it reported nothing.
 */
export interface TurnExit {
  readonly code?: number;
  readonly signal?: string;
}

/** A path capture did not send to the overlay on purpose; a directory ends with "/". */
export interface LeftOut {
  readonly path: string;
  readonly reason: LeftOutReason;
}

export interface Turn {
  readonly id: string;
  readonly sessionId: string;
  readonly workspaceId: string;
  readonly repoId: string;
  readonly clientTurnId: string | null;
  state: TurnStateName;
  outcome: OutcomeName | null;
  warm: boolean;
  readonly environmentPath: string;
  readonly startedAt: number;
  endedAt: number | null;
  supersededBy: string | null;
  endReason: string;
  /** What EndTurn captured (answered again to a retried EndTurn); null until then. */
  capturedPaths: readonly string[] | null;
  /** What that capture left out on purpose (answered again with capturedPaths). */
  leftOut: readonly LeftOut[] | null;
  /** How its command ended, as EndTurn was told; empty until then, and when it was told nothing. */
  exit: TurnExit;
  /** The messages of the agent's own commits EndTurn kept, oldest first; null until then. */
  commitMessages: readonly string[] | null;
  readonly abort: AbortController;
  /** The instance that runs (ran) it, for a turn read from the database; absent on this process's own. */
  readonly instanceId?: string | null;
  /** Set when its row insert lost to another instance's turn (docs/turns.md, "Several instances"). */
  lostRace?: boolean;
  env: Environment | undefined;
  /** The BeginTurn that started it (idempotent retries await it); absent on a turn read from the database. */
  started?: Promise<BeginResult>;
  /** Set when the row insert began; finishers await it before updating the row. */
  rowWritten: Promise<void> | undefined;
  /** The teardown after a cancel/supersede/session end (settled = it finished). */
  settled: Promise<unknown> | undefined;
  settledDone: boolean;
}

export interface BeginResult {
  readonly turn: Turn;
  readonly supersededTurnId: string;
  readonly map: MapResult;
}

/** A turn BeginTurn has just accepted: RUNNING, no environment yet, its `started` still to be set. */
export function newTurn(ws: Workspace, clientTurnId: string | undefined, environmentPath: string, now: number): Turn {
  return {
    id: randomUUID(),
    sessionId: ws.sessionId,
    workspaceId: ws.workspaceId,
    repoId: ws.repoId,
    clientTurnId: clientTurnId ?? null,
    state: "running",
    outcome: null,
    warm: false,
    environmentPath,
    startedAt: now,
    endedAt: null,
    supersededBy: null,
    endReason: "",
    capturedPaths: null,
    leftOut: null,
    exit: {},
    commitMessages: null,
    abort: new AbortController(),
    env: undefined,
    rowWritten: undefined,
    settled: undefined,
    settledDone: false,
  };
}

/** Where a stored turn stands in a session's list (newest first): its start (ms) and its row's insertion order. */
export type StoredTurnKey = readonly [startedAtMs: number, seq: number];

/** Where a running turn stands in the list of this instance's running turns (newest first): its start (ms) and id. */
export type TurnKey = readonly [startedAtMs: number, turnId: string];

export function turnKey(t: Turn): TurnKey {
  return [t.startedAt, t.id];
}

/** Orders keys as the database orders (started_at, id): ids are lower-case UUIDs, so text order is uuid order. */
export function compareTurnKeys(a: TurnKey, b: TurnKey): number {
  return a[0] !== b[0] ? a[0] - b[0] : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0;
}
