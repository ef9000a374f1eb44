/** berth.v1.TurnService: the wire in front of the turn scheduler (src/turns/, docs/turns.md). */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { MapStatus, OnBusy, type TurnService, TurnState, type TurnSchema, type WorkspaceMapSchema } from "../../gen/berth/v1/turn_service_pb.js";
import { TurnOutcome } from "../../gen/berth/v1/types_pb.js";
import { BerthError } from "../platform/errors.js";
import type { EventHub } from "../delivery/hub.js";
import type { WorkspaceRegistry } from "../sessions/registry.js";
import type { MapResult } from "../turns/map/index.js";
import { outcomeEnum, outcomeName } from "../platform/proto-enums.js";
import type { Turn, TurnScheduler } from "../turns/scheduler.js";
import type { TurnStateName } from "../turns/store.js";
import type { CallContext, ServiceHandlers } from "./handler.js";
import { actsFor, ownedSession } from "./session-access.js";
import { Check } from "./validate.js";

export interface TurnServiceDeps {
  readonly registry: WorkspaceRegistry;
  readonly turns: TurnScheduler;
  readonly events: EventHub;
}

const CLIENT_TURN_ID = { max: 128, pattern: /^[A-Za-z0-9][A-Za-z0-9._:@/-]*$/, patternDescription: "letters, digits and . _ : @ / - (starting with a letter or digit)" };

const STATES: Record<TurnStateName, TurnState> = {
  running: TurnState.RUNNING,
  ended: TurnState.ENDED,
  superseded: TurnState.SUPERSEDED,
  cancelled: TurnState.CANCELLED,
};

export function turnToWire(t: Turn): MessageInitShape<typeof TurnSchema> {
  return {
    turnId: t.id,
    sessionId: t.sessionId,
    workspaceId: t.workspaceId,
    clientTurnId: t.clientTurnId ?? "",
    state: STATES[t.state],
    outcome: outcomeEnum(t.outcome),
    environmentPath: t.environmentPath,
    warm: t.warm,
    startedAt: timestampFromMs(t.startedAt),
    ...(t.endedAt !== null && t.state !== "running" ? { endedAt: timestampFromMs(t.endedAt) } : {}),
  };
}

export function mapToWire(r: MapResult): MessageInitShape<typeof WorkspaceMapSchema> {
  switch (r.status) {
    case "ok":
    case "stale": {
      const m = r.map;
      return {
        status: r.status === "ok" ? MapStatus.OK : MapStatus.STALE,
        text: m.text,
        entries: m.entries.map((e) => ({ path: e.path, isDir: e.isDir })),
        shown: m.shown,
        total: m.total,
        reason: r.status === "stale" ? r.why : "",
      };
    }
    case "over_budget":
      return { status: MapStatus.OVER_BUDGET, reason: "the walk did not finish within BERTH_MAP_BUDGET_MS" };
    case "skipped":
      return { status: MapStatus.SKIPPED, reason: r.reason };
    case "cancelled":
      return { status: MapStatus.CANCELLED, reason: "the turn was cancelled" };
    case "failed":
      return { status: MapStatus.FAILED, reason: `${r.code}: ${r.message}` };
  }
}

export function turnHandlers(deps: TurnServiceDeps): ServiceHandlers<typeof TurnService> {
  const { registry, turns } = deps;
  /** The check the scheduler runs on a turn's session (which may since have been resumed). */
  const owner = (ctx: CallContext) => (sessionId: string) => ownedSession(registry, ctx, sessionId, "turns");

  return {
    async beginTurn(req, ctx) {
      const c = new Check();
      const sessionId = c.uuid("session_id", req.sessionId);
      const clientTurnId = c.text("client_turn_id", req.clientTurnId, CLIENT_TURN_ID);
      const onBusy = c.enumValue("on_busy", req.onBusy, OnBusy, false);
      c.done();
      const ws = await ownedSession(registry, ctx, sessionId!, "active"); // activity: recorded
      const r = await turns.beginTurn(ws, clientTurnId, onBusy === OnBusy.REJECT ? "reject" : "supersede", ctx.signal);
      // A cold acquire may take long: the lease runs from the answer (and the running turn renews it).
      if (ws.lifecycle === "active") registry.touch(ws);
      ctx.logFields.turnId = r.turn.id;
      ctx.logFields.warm = r.turn.warm;
      return {
        turnId: r.turn.id,
        environmentPath: r.turn.environmentPath,
        warm: r.turn.warm,
        workspaceMap: mapToWire(r.map),
        supersededTurnId: r.supersededTurnId,
      };
    },

    async endTurn(req, ctx) {
      const c = new Check();
      const turnId = c.uuid("turn_id", req.turnId);
      const outcome = c.enumValue("outcome", req.outcome, TurnOutcome);
      c.done();
      ctx.logFields.turnId = turnId;
      const r = await turns.endTurn(turnId!, outcomeName(outcome!)!, owner(ctx));
      return { turn: turnToWire(r.turn), capturedPaths: r.captured };
    },

    async cancelTurn(req, ctx) {
      const c = new Check();
      const turnId = c.uuid("turn_id", req.turnId);
      c.done();
      ctx.logFields.turnId = turnId;
      return turns.cancelTurn(turnId!, owner(ctx));
    },

    async turnHeartbeat(req, ctx) {
      const c = new Check();
      const turnId = c.uuid("turn_id", req.turnId);
      c.done();
      const turn = await turns.turn(turnId!);
      const ws = await owner(ctx)(turn.sessionId);
      // A TurnHeartbeat is activity of the session the turn runs in: it keeps the session connected.
      if (ws.lifecycle === "active") registry.touch(ws);
      return { current: (await turns.heartbeat(turnId!)).current };
    },

    async listTurns(req, ctx) {
      const c = new Check();
      const sessionId = c.uuid("session_id", req.sessionId, false);
      c.done();
      if (sessionId) await owner(ctx)(sessionId);
      let list = await turns.listTurns(sessionId);
      if (!sessionId) list = list.filter((t) => actsFor(ctx.principal, registry.liveWorkspace(t.sessionId)?.agentId));
      return { turns: list.map(turnToWire) };
    },

    async *watchTurns(req, ctx) {
      const c = new Check();
      const sessionId = c.uuid("session_id", req.sessionId, false);
      c.done();
      if (sessionId) await owner(ctx)(sessionId);
      const hub = deps.events;
      if (!hub) throw new BerthError("unavailable", "EVENTS_UNAVAILABLE", "event delivery is not running on this server");
      for await (const event of hub.watch({ kinds: ["turn.*", "env.evicted"], sessionIds: sessionId ? [sessionId] : [] }, ctx.signal)) {
        if (!sessionId && !actsFor(ctx.principal, event.agentId)) continue;
        yield { event };
      }
    },

    async getPoolStats() {
      return turns.stats();
    },

    async getWorkspaceMap(req, ctx) {
      const c = new Check();
      const sessionId = c.uuid("session_id", req.sessionId);
      c.done();
      const ws = await ownedSession(registry, ctx, sessionId!, "active");
      const map = await deps.turns.workspaceMap(ws, ctx.signal);
      return { workspaceMap: mapToWire(map) };
    },
  };
}
