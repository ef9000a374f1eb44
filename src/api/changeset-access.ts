/**
 * Who may read and who may move a changeset: the one place TransitionChangeset, CommitChangeset,
 * DiffChangeset and GetChangeset ask, so that GetChangeset's allowed_transitions are the moves
 * TransitionChangeset would accept, computed by the same code, not a copy of its rule.
 */
import { actsForAnyone, requireChangesetMember, requireIndependentReview, requireRepository, REVIEWER_STATES } from "./authorize.js";
import type { CallContext } from "./handler.js";
import { BerthError } from "../platform/errors.js";
import { nextStates } from "../sessions/changeset-states.js";
import type { ChangesetStateName } from "../platform/schema.js";
import type { WorkspaceRegistry } from "../sessions/registry.js";

/**
 * Who may read a changeset (DiffChangeset, GetChangeset, its comments and verifications): a member of it or an admin, and a
 * member whose grant on the changeset's repository was withdrawn may not.
 */
export async function requireChangesetReader(registry: WorkspaceRegistry, ctx: CallContext, changesetId: string): Promise<string | undefined> {
  // A reviewer reads what it decides on (its grant on the repository is checked below).
  await requireChangesetMember(ctx, changesetId, () => registry.agentsOfChangeset(changesetId), "NOT_CHANGESET_OWNER", true);
  const repoId = await registry.repositoryOfChangeset(changesetId);
  if (!actsForAnyone(ctx.principal) && repoId !== undefined) await requireRepository(registry, ctx.principal, repoId);
  return repoId;
}

/**
 * Who may move a changeset to `to` (a transition, a merge; a commit has no `to`): a member of it
 * or an admin, a reviewer for its decisions (REVIEWER_STATES), a member only while granted its
 * repository; and under the repository's independent_review policy, APPROVED and MERGED never
 * from one of its authors. allowedTransitions follows this, so the console offers exactly these.
 */
export async function requireChangesetMover(registry: WorkspaceRegistry, ctx: CallContext, changesetId: string, to?: ChangesetStateName): Promise<void> {
  const reviewerMay = to !== undefined && REVIEWER_STATES.has(to);
  await requireChangesetMember(ctx, changesetId, () => registry.agentsOfChangeset(changesetId), "NOT_CHANGESET_OWNER", reviewerMay);
  if (!actsForAnyone(ctx.principal)) {
    const repoId = await registry.repositoryOfChangeset(changesetId);
    if (repoId !== undefined) await requireRepository(registry, ctx.principal, repoId);
  }
  if (to !== undefined) {
    await requireIndependentReview(ctx, changesetId, to, () => registry.independentReviewOfChangeset(changesetId), () => registry.agentsOfChangeset(changesetId));
  }
}

/**
 * The states the caller may move a changeset in `state` to now: the state machine's next states
 * that requireChangesetMover lets through. A refusal of the caller is an absent state here, not
 * an error: a reader who may not move it gets an empty list.
 */
export async function allowedTransitions(registry: WorkspaceRegistry, ctx: CallContext, changesetId: string, state: ChangesetStateName): Promise<ChangesetStateName[]> {
  const allowed: ChangesetStateName[] = [];
  for (const to of nextStates(state)) {
    try {
      await requireChangesetMover(registry, ctx, changesetId, to);
      allowed.push(to);
    } catch (err) {
      if (err instanceof BerthError && err.kind === "permission_denied") continue;
      throw err;
    }
  }
  return allowed;
}

/** Who a caller is in a changeset's history: its agent id, or "anonymous" when auth is off (nobody is identified). */
export function moverOf(ctx: CallContext): string {
  return ctx.principal.agentId ?? "anonymous";
}
