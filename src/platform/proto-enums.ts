/**
 * The one mapping between Berth's state names (the values stored in PostgreSQL) and the
 * generated protobuf enums. Stored event payloads are protobuf (docs/decisions.md), so the
 * domain layers build payloads with these; `api/` uses the same tables for responses. Each
 * table is written once; its inverse is derived from it, never written by hand.
 */
import { ChangesetState, FileChange, LifecycleState, SymbolChangeKind, TurnOutcome, VerificationState, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import type { ChangesetStateName, FileChangeName, LifecycleName, ModeName, OutcomeName, VerificationStateName } from "./schema.js";

export type { FileChangeName, OutcomeName };

const CHANGESET_STATES: Readonly<Record<ChangesetStateName, ChangesetState>> = {
  draft: ChangesetState.DRAFT,
  submitted: ChangesetState.SUBMITTED,
  verifying: ChangesetState.VERIFYING,
  approved: ChangesetState.APPROVED,
  rejected: ChangesetState.REJECTED,
  merged: ChangesetState.MERGED,
  closed: ChangesetState.CLOSED,
};

const MODES: Readonly<Record<ModeName, WorkspaceMode>> = {
  ephemeral: WorkspaceMode.EPHEMERAL,
  persistent: WorkspaceMode.PERSISTENT,
};

const LIFECYCLES: Readonly<Record<LifecycleName, LifecycleState>> = {
  active: LifecycleState.ACTIVE,
  stranded: LifecycleState.STRANDED,
  abandoned: LifecycleState.ABANDONED,
  destroyed: LifecycleState.DESTROYED,
};

const OUTCOMES: Readonly<Record<OutcomeName, TurnOutcome>> = {
  completed: TurnOutcome.COMPLETED,
  awaiting_approval: TurnOutcome.AWAITING_APPROVAL,
  failed: TurnOutcome.FAILED,
};

const FILE_CHANGES: Readonly<Record<FileChangeName, FileChange>> = {
  added: FileChange.ADDED,
  modified: FileChange.MODIFIED,
  deleted: FileChange.DELETED,
};

const SYMBOL_CHANGES: Readonly<Record<FileChangeName, SymbolChangeKind>> = {
  added: SymbolChangeKind.ADDED,
  modified: SymbolChangeKind.MODIFIED,
  deleted: SymbolChangeKind.DELETED,
};

const VERIFICATION_STATES: Readonly<Record<VerificationStateName, VerificationState>> = {
  running: VerificationState.RUNNING,
  passed: VerificationState.PASSED,
  failed: VerificationState.FAILED,
  error: VerificationState.ERROR,
};

export const verificationStateEnum = (name: VerificationStateName): VerificationState => VERIFICATION_STATES[name];

function inverse<N extends string, E extends number>(table: Readonly<Record<N, E>>): ReadonlyMap<E, N> {
  return new Map((Object.entries(table) as [N, E][]).map(([n, e]) => [e, n]));
}

const CHANGESET_NAMES = inverse(CHANGESET_STATES);
const MODE_NAMES = inverse(MODES);
const OUTCOME_NAMES = inverse(OUTCOMES);

export const changesetStateEnum = (name: ChangesetStateName): ChangesetState => CHANGESET_STATES[name];
/** undefined for UNSPECIFIED and for numbers the contract does not define. */
export const changesetStateName = (state: ChangesetState): ChangesetStateName | undefined => CHANGESET_NAMES.get(state);
export const modeEnum = (name: ModeName): WorkspaceMode => MODES[name];
export const modeName = (mode: WorkspaceMode): ModeName | undefined => MODE_NAMES.get(mode);
export const lifecycleEnum = (name: LifecycleName): LifecycleState => LIFECYCLES[name];
export const outcomeEnum = (name: OutcomeName | null): TurnOutcome => (name === null ? TurnOutcome.UNSPECIFIED : OUTCOMES[name]);
export const outcomeName = (outcome: TurnOutcome): OutcomeName | undefined => OUTCOME_NAMES.get(outcome);
export const fileChangeEnum = (name: FileChangeName): FileChange => FILE_CHANGES[name];
export const symbolChangeEnum = (name: FileChangeName): SymbolChangeKind => SYMBOL_CHANGES[name];
