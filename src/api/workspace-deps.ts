/**
 * What the parts of WorkspaceService are built from. Its own module so that the composition
 * (./workspace-service.ts) imports the parts (./lifecycle-handlers.ts, ./event-handlers.ts,
 * ./overlay-handlers.ts) and no part has to import the composition back.
 */
import type { EventHub, SubscriberOptions } from "../delivery/hub.js";
import type { LifecycleManager } from "../sessions/lifecycle.js";
import type { Landing } from "../overlay/landing.js";
import type { OverlayService } from "../overlay/overlay-service.js";
import type { WorkspaceRegistry } from "../sessions/registry.js";
import type { Verifier } from "../verification/verifier.js";

export interface WorkspaceServiceDeps {
  readonly registry: WorkspaceRegistry;
  /** Strand, resume, abandon and the session lease. */
  readonly lifecycle: LifecycleManager;
  /** Event delivery: WatchEvents and AttachSession notices. */
  readonly events: EventHub;
  /** Subscriber buffer bounds (tests make them small). */
  readonly eventSubscriberOptions?: SubscriberOptions | undefined;
  /** The workspace overlay and claims (WriteFile, ReadFile, ClaimSymbols, …). */
  readonly overlay?: OverlayService | undefined;
  /** CommitChangeset and the merge of a MERGED transition (absent: MERGED is only a state). */
  readonly landing?: Landing | undefined;
  /** Checks on VERIFYING: ListVerifications reads their records (absent: none are run here). */
  readonly verifier?: Verifier | undefined;
  /** The turn scheduler's capture of a stranded session's running turn (ResumeSession waits for it). */
  readonly captures?: { captureSettled(workspaceId: string, callDeadline?: number): Promise<void> } | undefined;
}
