/**
 * Who may read and who may move a changeset: the one place TransitionChangeset, CommitChangeset,
 * DiffChangeset and GetChangeset ask, so that GetChangeset's allowed_transitions are the moves
 * TransitionChangeset would accept, computed by the same code, not a copy of its rule.
 */
import { actsForAnyone, requireChangesetMember, requireIndependentReview, requireRepository, REVIEWER_STATES } from "./authorize.js";
import type { CallContext } from "./handler.js";
import type { Change } from "../platform/unit-of-work.js";
import { BerthError } from "../platform/errors.js";
import { nextStates } from "../sessions/changeset-states.js";
import type { ChangesetStateName } from "../platform/schema.js";
import type { WorkspaceRegistry } from "../sessions/registry.js";

/**
 * What the rules read of one changeset, each from PostgreSQL at most once per call: a call that
 * asks several questions (GetChangeset: may it read, and which of the next states may it move to)
 * pays for each fact once, not once per question.
 */
export class ChangesetFacts {
  private agentsRead?: Promise<readonly string[]>;
  private repoRead?: Promise<string | undefined>;
  private policyRead?: Promise<boolean>;
  private grantChecked?: Promise<string | undefined>;

  constructor(
    private readonly registry: WorkspaceRegistry,
    private readonly ctx: CallContext,
    readonly changesetId: string,
  ) {}

  /** The agents with (or who had) a session on it. */
  readonly agents = (): Promise<readonly string[]> => (this.agentsRead ??= this.registry.agentsOfChangeset(this.changesetId));
  /** Its repository's independent_review policy. */
  readonly policy = (): Promise<boolean> => (this.policyRead ??= this.registry.independentReviewOfChangeset(this.changesetId));

  /** Its repository (undefined: no such changeset), once the caller's grant on it is checked (an admin needs none). */
  grantedRepository(): Promise<string | undefined> {
    return (this.grantChecked ??= (async () => {
      const repoId = await (this.repoRead ??= this.registry.repositoryOfChangeset(this.changesetId));
      if (!actsForAnyone(this.ctx.principal) && repoId !== undefined) await requireRepository(this.registry, this.ctx.principal, repoId);
      return repoId;
    })());
  }
}

/**
 * Who may read a changeset (DiffChangeset, GetChangeset, its comments and verifications): a member of it or an admin, and a
 * member whose grant on the changeset's repository was withdrawn may not. Its repository id.
 */
export async function requireChangesetReader(
  registry: WorkspaceRegistry,
  ctx: CallContext,
  changesetId: string,
  facts = new ChangesetFacts(registry, ctx, changesetId),
): Promise<string | undefined> {
  // A reviewer reads what it decides on (its grant on the repository is checked below).
  await requireChangesetMember(ctx, changesetId, facts.agents, "NOT_CHANGESET_OWNER", true);
  return facts.grantedRepository();
}

/**
 * Who may move a changeset to `to` (a transition, a merge; a commit has no `to`): a member of it
 * or an admin, a reviewer for its decisions (REVIEWER_STATES), a member only while granted its
 * repository; and under the repository's independent_review policy, APPROVED and MERGED never
 * from one of its authors. allowedTransitions follows this, so the console offers exactly these.
 */
export async function requireChangesetMover(
  registry: WorkspaceRegistry,
  ctx: CallContext,
  changesetId: string,
  to?: ChangesetStateName,
  facts = new ChangesetFacts(registry, ctx, changesetId),
): Promise<void> {
  const reviewerMay = to !== undefined && REVIEWER_STATES.has(to);
  await requireChangesetMember(ctx, changesetId, facts.agents, "NOT_CHANGESET_OWNER", reviewerMay);
  if (!actsForAnyone(ctx.principal)) await facts.grantedRepository();
  if (to !== undefined) await requireIndependentReview(ctx, changesetId, to, facts.policy, facts.agents);
}

/**
 * The independent-review rule of requireChangesetMover, asked again inside the transition's
 * transaction once its compare-and-set holds the changeset row (MoveOptions.guard): the authors
 * read before it could miss a session of the caller's that joined in between. A join locks the
 * row FOR SHARE, so under the lock every join has committed or waits for this transition.
 */
export function independentReviewGuard(registry: WorkspaceRegistry, ctx: CallContext, to: ChangesetStateName, facts: ChangesetFacts): (change: Change) => Promise<void> {
  return (change) => requireIndependentReview(ctx, facts.changesetId, to, facts.policy, () => registry.agentsOfChangeset(facts.changesetId, change.trx));
}

/**
 * The states the caller may move a changeset in `state` to now: the state machine's next states
 * that requireChangesetMover lets through. A refusal of the caller is an absent state here, not
 * an error: a reader who may not move it gets an empty list. `facts`: the call's, when it has
 * read some already.
 */
export async function allowedTransitions(
  registry: WorkspaceRegistry,
  ctx: CallContext,
  changesetId: string,
  state: ChangesetStateName,
  facts = new ChangesetFacts(registry, ctx, changesetId),
): Promise<ChangesetStateName[]> {
  const allowed: ChangesetStateName[] = [];
  for (const to of nextStates(state)) {
    try {
      await requireChangesetMover(registry, ctx, changesetId, to, facts);
      allowed.push(to);
    } catch (err) {
      if (err instanceof BerthError && err.kind === "permission_denied") continue;
      throw err;
    }
  }
  return allowed;
}

/** Who a caller is in a changeset's history and its comments: its agent id, or "anonymous" when auth is off (nobody is identified). */
export function moverOf(ctx: CallContext): string {
  return ctx.principal.agentId ?? "anonymous";
}
