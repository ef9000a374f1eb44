/**
 * When claims end without their holder asking: every claim of a session that leaves `active`
 * (strand, abandon, destroy, GC, reconcile), and the claims of a changeset's sessions when the
 * changeset is finished (terminal) or — configurable — submitted for review. Each release is
 * reported with claim.released events in the same transaction.
 */
import { isTerminal } from "../sessions/changeset-states.js";
import type { SessionHooks } from "../sessions/session-hooks.js";
import { claimEvents } from "./claim-events.js";
import * as repo from "./claims.repository.js";

export interface ClaimRuleSettings {
  /** BERTH_RELEASE_CLAIMS_ON_SUBMIT: a changeset entering SUBMITTED releases its sessions' claims. */
  readonly releaseOnSubmit: boolean;
}

export function registerClaimRules(hooks: SessionHooks, settings: ClaimRuleSettings): void {
  hooks.onExit(async (change, exit) => {
    const released = await repo.releaseClaimsOf(change.trx, exit.workspaceIds);
    change.record(...claimEvents("claim.released", released, exit.at, `session_${exit.to}`));
  });
  hooks.onChangesetMove(async (change, move) => {
    if (!(isTerminal(move.to) || (move.to === "submitted" && settings.releaseOnSubmit))) return;
    const released = await repo.releaseClaimsOfChangeset(change.trx, move.changesetId);
    change.record(...claimEvents("claim.released", released, move.at, `changeset_${move.to}`, move.changesetId));
  });
}
