/**
 * Finding a turn its environment: reuse the parked one (warm) or build one (cold).
 *
 * A parked environment is reused only after a liveness probe (one read of its marker): a
 * directory removed under a parked environment would otherwise be handed to the next turn,
 * and the warm path never rebuilds. The probe fails open — an error or a timeout reuses —
 * because a flaky check must not cost every warm reuse. A dead or expired one is torn down
 * and rebuilt cold. The probe may have been started ahead, when the BeginTurn arrived (ProbeAhead:
 * it then runs while the call's session check reads PostgreSQL); its answer is used only for the
 * environment it probed, still the parked one.
 *
 * A cold acquire that finds a directory no pool entry owns (a previous process's) captures it
 * against its saved manifest before removing it, or moves it to .orphaned/ when it cannot:
 * nothing a crash left behind is deleted uncaptured.
 *
 * Runs in the workspace's lane (serialised with every other directory job of the workspace).
 */
import type { Logger } from "pino";
import type { Clock } from "../platform/clock.js";
import type { OverlayPort } from "../overlay/overlay-port.js";
import type { WorkspaceRegistry } from "../sessions/registry.js";
import { envPath, exists, loadLeftover, materialise, moveAside, saveManifest, type BaseSpares, type Environment } from "./environment.js";
import { branchOf } from "./env-git.js";
import type { Pool, SlotState, WsState } from "./pool.js";
import type { Teardowns } from "./teardown.js";
import type { Turn } from "./turn.js";

export interface AcquireDeps {
  readonly root: string;
  readonly registry: WorkspaceRegistry;
  readonly overlay: OverlayPort;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly pool: Pool;
  readonly teardowns: Teardowns;
  readonly spares: BaseSpares;
  readonly probe: (env: Environment) => Promise<boolean>;
  /** Keeps a background promise (the manifest save) until the scheduler stops. */
  readonly track: (p: Promise<unknown>) => void;
}

/** A liveness probe started when a BeginTurn arrived, of the environment parked then. */
export interface ProbeAhead {
  readonly env: Environment;
  readonly alive: Promise<boolean>;
}

export class Acquirer {
  constructor(private readonly deps: AcquireDeps) {}

  /** The state's parked environment if it is unexpired and alive (warm), else a cold acquire. */
  async acquire(state: WsState, turn: Turn, parked: { slot: SlotState | undefined; parkedAt: number }, ahead?: ProbeAhead): Promise<{ env: Environment; warm: boolean }> {
    let env = state.env;
    let warm = false;
    if (env) {
      const expiry = this.deps.pool.expiryOf(parked.slot, parked.parkedAt, this.deps.clock.now());
      if (expiry) {
        await this.deps.teardowns.teardown(state, env, expiry, turn.sessionId);
        env = undefined;
      } else {
        let alive = true;
        try {
          alive = await (ahead?.env === env ? ahead.alive : this.deps.probe(env));
        } catch (err) {
          this.deps.logger.warn({ err, path: env.path, workspaceId: state.workspaceId }, "turn pool: mount-probe threw, reusing");
        }
        if (alive) warm = true;
        else {
          this.deps.logger.info({ path: env.path, workspaceId: state.workspaceId }, "turn pool: mismatch (mount-lost): the parked environment is gone; rebuilding cold");
          await this.deps.teardowns.teardown(state, env, "mount-lost", turn.sessionId);
          env = undefined;
        }
      }
    }
    if (!env || state.env !== env) {
      env = await this.coldAcquire(state, turn);
    }
    return { env, warm };
  }

  private async coldAcquire(state: WsState, turn: Turn): Promise<Environment> {
    const ws = state.ws;
    const root = this.deps.root;
    const dir = envPath(root, ws.workspaceId);
    if (await exists(dir)) {
      // A directory no pool entry owns: a previous process's (or a crashed turn's).
      const leftover = await loadLeftover(root, ws.workspaceId);
      if (leftover) {
        await this.deps.teardowns.teardown(state, leftover, "pre-acquire", turn.sessionId);
      } else {
        const aside = await moveAside(root, dir, `${ws.workspaceId}-${Date.now()}`);
        this.deps.teardowns.countEviction("pre-acquire", state, dir, turn.sessionId, { movedTo: aside });
      }
    }
    const [repo, entries] = await Promise.all([this.deps.registry.repository(ws.repoId), this.deps.overlay.entries(ws)]);
    const onSkipped = (path: string, reason: string) =>
      this.deps.logger.error({ workspaceId: ws.workspaceId, path, reason }, "turn pool: an overlay entry was left out of the environment (it would have been written through a link, or its path is refused)");
    // The repository's objects on this instance: its source path, or the mirror (fetched when it lacks the base).
    const gitDir = await this.deps.registry.locations.withCommit(repo, ws.baseCommit);
    const env = await materialise({ root, workspaceId: ws.workspaceId, sourcePath: gitDir, baseCommit: ws.baseCommit, branch: branchOf(ws.changeset.id), entries, spares: this.deps.spares, onSkipped });
    // Saved before the turn can write: a crash (kill -9) from here on leaves a directory the
    // restart can diff against it and capture (scheduler.recoverLeftovers). Without it the
    // restart can only keep the directory aside and report it (NO_MANIFEST).
    await saveManifest(root, env).catch((err: unknown) => this.deps.logger.warn({ err }, "turn pool: saving the manifest failed"));
    return env;
  }
}
