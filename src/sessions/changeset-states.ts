/**
 * The changeset state machine: DRAFT→SUBMITTED→VERIFYING→APPROVED|REJECTED, APPROVED→MERGED,
 * any non-terminal→CLOSED. MERGED, REJECTED and CLOSED are terminal. A reviewer sends work back
 * for changes by moving SUBMITTED, VERIFYING or APPROVED back to DRAFT (issue 29): REJECTED is
 * the end of a changeset, DRAFT the state its sessions are meant to work in.
 */
import type { ChangesetStateName } from "../platform/schema.js";

export const TERMINAL_STATES: ReadonlySet<ChangesetStateName> = new Set(["merged", "rejected", "closed"]);

const NEXT: Readonly<Record<ChangesetStateName, readonly ChangesetStateName[]>> = {
  draft: ["submitted", "closed"],
  submitted: ["verifying", "draft", "closed"],
  verifying: ["approved", "rejected", "draft", "closed"],
  approved: ["merged", "draft", "closed"],
  rejected: [],
  merged: [],
  closed: [],
};

export function isTerminal(state: ChangesetStateName): boolean {
  return TERMINAL_STATES.has(state);
}

/** The states from which `to` may be entered. */
export function sourcesOf(to: ChangesetStateName): ChangesetStateName[] {
  return (Object.keys(NEXT) as ChangesetStateName[]).filter((from) => NEXT[from].includes(to));
}

export function canTransition(from: ChangesetStateName, to: ChangesetStateName): boolean {
  return NEXT[from].includes(to);
}

/** The states a changeset in `from` may move to, in the machine's order (none from a terminal state). */
export function nextStates(from: ChangesetStateName): readonly ChangesetStateName[] {
  return NEXT[from];
}
