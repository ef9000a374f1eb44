/** berth.v1.TurnService: the wire in front of the turn scheduler (src/turns/, docs/turns.md). */
import type { DescMessage, DescMethodUnary, MessageInitShape, MessageShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { BeginTurnResponseSchema, GetWorkspaceMapResponseSchema, OnBusy, TurnService, TurnState, type TurnSchema } from "../../gen/berth/v1/turn_service_pb.js";
import { TurnOutcome } from "../../gen/berth/v1/types_pb.js";
import { BerthError } from "../platform/errors.js";
import type { EventHub } from "../delivery/hub.js";
import type { WorkspaceRegistry } from "../sessions/registry.js";
import { outcomeEnum, outcomeName } from "../platform/proto-enums.js";
import { compareTurnKeys, LiveCheckStale, TurnRaceLost, turnKey, type Placement, type StoredTurnKey, type Turn, type TurnExit, type TurnKey, type TurnScheduler } from "../turns/scheduler.js";
import type { TurnStateName } from "../turns/store.js";
import type { CallContext, ServiceHandlers } from "./handler.js";
import { actsFor, isSessionActivity, ownedLiveSession, ownedSession } from "./session-access.js";
import { eventForCaller, mayUseRepository, repositoryVisibility, requireRole, requireServerPaths, showsServerPaths } from "./authorize.js";
import { isForwarded, serveOrForward, type TurnForwarder } from "./turn-routing.js";
import { addPoolStats, type PoolStats } from "../turns/pool.js";
import { Check } from "./validate.js";
import { responseWithMap } from "./map-encoding.js";
import { pageOf, readPage, type PageRule } from "./pagination.js";

const TURNS_PAGE: PageRule = { list: "turns", defaultSize: 100, maxSize: 1000 };
/** The running turns of a server page by another key (in memory, no row order): their own token list. */
const RUNNING_TURNS_PAGE: PageRule = { ...TURNS_PAGE, list: "running-turns" };

export interface TurnServiceDeps {
  readonly registry: WorkspaceRegistry;
  readonly turns: TurnScheduler;
  readonly events: EventHub;
  /**
   * Sends a turn RPC to the instance holding the session's environment (transport/forwarder.ts).
   * Absent: every call is served here (one instance).
   */
  readonly forwarder?: TurnForwarder;
  /**
   * This instance, as BeginTurn names the one whose disk holds the environment (a client that
   * cannot reach the directory tells its user where to run); read per call: its name and address
   * are known once the ports are bound.
   */
  readonly self?: InstanceSelf;
}

/** How this instance is known: its id, stable name and advertised gRPC address (empty until known). */
export interface InstanceSelf {
  readonly instanceId: string;
  readonly name: string;
  readonly address: string;
}

/** EndTurnRequest.exit_signal: a signal's name as Node and kill(1) spell them. */
const EXIT_SIGNAL = { max: 32, pattern: /^SIG[A-Z0-9]{2,28}$/, patternDescription: 'a signal name ("SIG" and capital letters or digits, such as SIGTERM)' };

const CLIENT_TURN_ID = { max: 128, pattern: /^[A-Za-z0-9][A-Za-z0-9._:@/-]*$/, patternDescription: "letters, digits and . _ : @ / - (starting with a letter or digit)" };

const STATES: Record<TurnStateName, TurnState> = {
  running: TurnState.RUNNING,
  ended: TurnState.ENDED,
  superseded: TurnState.SUPERSEDED,
  cancelled: TurnState.CANCELLED,
};

/** `paths`: whether the caller sees server-side paths (environment_path); api/authorize.ts showsServerPaths. */
export function turnToWire(t: Turn, paths: boolean): MessageInitShape<typeof TurnSchema> {
  return {
    turnId: t.id,
    sessionId: t.sessionId,
    workspaceId: t.workspaceId,
    clientTurnId: t.clientTurnId ?? "",
    state: STATES[t.state],
    outcome: outcomeEnum(t.outcome),
    environmentPath: paths ? t.environmentPath : "",
    warm: t.warm,
    startedAt: timestampFromMs(t.startedAt),
    ...(t.endedAt !== null && t.state !== "running" ? { endedAt: timestampFromMs(t.endedAt) } : {}),
    ...(t.exit.code !== undefined ? { exitCode: t.exit.code } : {}),
    exitSignal: t.exit.signal ?? "",
    commitMessages: [...(t.commitMessages ?? [])],
  };
}

/**
 * EndTurn's exit_code (0 to 255) and exit_signal, at most one of them (a command exits, or a
 * signal kills it). Its violations go to `c`, whose done() throws before the result is used.
 */
function turnExit(c: Check, code: number | undefined, signal: string): TurnExit {
  if (code !== undefined) c.range("exit_code", code, 0, 255);
  if (signal !== "" && !(signal.length <= EXIT_SIGNAL.max && EXIT_SIGNAL.pattern.test(signal))) {
    c.add("exit_signal", "INVALID_FORMAT", `must be ${EXIT_SIGNAL.patternDescription}, got ${JSON.stringify(signal.slice(0, 64))}`);
  }
  if (code !== undefined && signal !== "") c.add("exit_signal", "MUTUALLY_EXCLUSIVE", `set with exit_code ${code}: a command either exits with a status or is killed by a signal; give one`);
  return { ...(code !== undefined ? { code } : {}), ...(signal !== "" ? { signal } : {}) };
}

export function turnHandlers(deps: TurnServiceDeps): ServiceHandlers<typeof TurnService> {
  const { registry, turns, forwarder } = deps;
  const methods = TurnService.method;
  /**
   * Whether a failed forward means the holder is gone: it could not be reached and PostgreSQL
   * confirms its process ended (turns/ownership.ts confirmGone marks it stopped). The next
   * placement then fails its running turn (owner_lost) and serves here, at once rather than once
   * its heartbeat goes stale.
   */
  const holderGone = async (err: unknown): Promise<boolean> =>
    err instanceof BerthError && err.reason === "TURN_OWNER_UNREACHABLE" && (await turns.ownership.confirmGone(err.metadata.owner_instance ?? ""));
  /** serveOrForward, placed again once if the holder turned out to be gone. */
  async function routed<I extends DescMessage, O extends DescMessage>(
    method: DescMethodUnary<I, O>,
    ctx: CallContext,
    req: MessageShape<I>,
    place: (fresh: boolean) => Promise<Placement>,
    local: () => Promise<MessageInitShape<O>>,
  ): Promise<MessageInitShape<O>> {
    try {
      return await serveOrForward(forwarder, method, ctx, req, await place(false), local);
    } catch (err) {
      if (!(await holderGone(err))) throw err;
      return serveOrForward(forwarder, method, ctx, req, await place(true), local);
    }
  }
  /** The check the scheduler runs on a turn's session (which may since have been resumed). */
  const owner = (ctx: CallContext) => (sessionId: string) => ownedSession(registry, ctx, sessionId, "turns");
  /** A turn by id and its session's workspace, the caller's ownership checked (once: the scheduler is handed the result). */
  const turnAndSession = async (ctx: CallContext, turnId: string) => {
    const turn = await turns.turn(turnId);
    return { turn, ws: await owner(ctx)(turn.sessionId) };
  };

  return {
    async beginTurn(req, ctx) {
      const c = new Check();
      const sessionId = c.uuid("session_id", req.sessionId);
      const clientTurnId = c.text("client_turn_id", req.clientTurnId, CLIENT_TURN_ID);
      const onBusy = c.enumValue("on_busy", req.onBusy, OnBusy, false);
      c.done();
      // Nothing is looked at, let alone begun, for a caller who asked for a path it would not be shown.
      if (req.requireEnvironmentPath) requireServerPaths(ctx.principal, "require_environment_path");
      // A warm start: the liveness probe of the parked environment starts now, beside the check.
      const ahead = turns.probeAhead(sessionId!);
      // Warm, on a session held live here: checked on its live object, and the row's check folded
      // into the turn row's insert, which writes only while the row holds what the check relied
      // on (docs/turns.md, "The session check of a warm BeginTurn"). Otherwise, or when the row
      // moved meanwhile (LiveCheckStale), ownedSession reads the row first, as for every RPC.
      let held = ahead !== undefined && !clientTurnId ? await ownedLiveSession(registry, ctx, sessionId!) : undefined;
      let ws = held?.ws ?? (await ownedSession(registry, ctx, sessionId!, "active"));
      const local = async () => {
        const r = await turns.beginTurn(ws, clientTurnId, onBusy === OnBusy.REJECT ? "reject" : "supersede", ctx.signal, ahead, held?.facts).catch(async (err: unknown) => {
          // Cancelled before it started because its session just left `active` (stranded while
          // the environment was being prepared): the agent is told what it can act on — the
          // session's state (SESSION_STRANDED: resume it), not a bare TURN_CANCELLED.
          if (err instanceof BerthError && err.reason === "TURN_CANCELLED") await ownedSession(registry, ctx, sessionId!, "active");
          throw err;
        });
        // A cold acquire may take long: the lease runs from the answer (and the running turn renews it).
        if (ws.lifecycle === "active" && isSessionActivity(ctx, ws)) registry.touch(ws);
        ctx.logFields.turnId = r.turn.id;
        ctx.logFields.warm = r.turn.warm;
        const paths = showsServerPaths(ctx.principal);
        const fields = {
          turnId: r.turn.id,
          environmentPath: paths ? r.turn.environmentPath : "",
          warm: r.turn.warm,
          supersededTurnId: r.supersededTurnId,
          // Served here, so the environment is on this instance's disk (a forwarded BeginTurn is served by its holder).
          ...(paths && deps.self ? { environmentInstance: { instanceId: deps.self.instanceId, instanceName: deps.self.name, advertiseAddress: deps.self.address } } : {}),
        };
        return responseWithMap(BeginTurnResponseSchema, fields, "workspaceMap", r.map);
      };
      let place = await turns.ownership.ofSession(ws);
      let rereads = 0;
      for (let attempt = 0; ; attempt++) {
        try {
          return await serveOrForward(forwarder, methods.beginTurn, ctx, req, place, local);
        } catch (err) {
          if (err instanceof LiveCheckStale && rereads++ < 2) {
            // Nothing was written: the session's row moved since it was checked (stranded, ended,
            // rebased meanwhile). The row answers now (the session's state, or the session as it
            // is, begun as any BeginTurn), without the live check.
            held = undefined;
            ws = await ownedSession(registry, ctx, sessionId!, "active");
            place = await turns.ownership.ofSession(ws);
            attempt--;
            continue;
          }
          // Another instance's turn won the database (turns_one_running), or the holder is gone:
          // ask again who holds the session now, and go there (or, if nobody does, try here).
          if (attempt > 0 || !(err instanceof TurnRaceLost || (await holderGone(err)))) throw err;
          place = await turns.ownership.ofSession(ws, { fresh: true });
        }
      }
    },

    async endTurn(req, ctx) {
      const c = new Check();
      const turnId = c.uuid("turn_id", req.turnId);
      const outcome = c.enumValue("outcome", req.outcome, TurnOutcome);
      const exit = turnExit(c, req.exitCode, req.exitSignal);
      c.done();
      ctx.logFields.turnId = turnId;
      const { turn, ws } = await turnAndSession(ctx, turnId!);
      return routed(methods.endTurn, ctx, req, () => turns.ownership.ofTurn(turn, ws), async () => {
        const r = await turns.endTurn(turnId!, outcomeName(outcome!)!, exit, () => Promise.resolve(ws));
        return { turn: turnToWire(r.turn, showsServerPaths(ctx.principal)), capturedPaths: r.captured, leftOut: r.leftOut.map((l) => ({ path: l.path, reason: l.reason })) };
      });
    },

    async cancelTurn(req, ctx) {
      const c = new Check();
      const turnId = c.uuid("turn_id", req.turnId);
      c.done();
      ctx.logFields.turnId = turnId;
      const { turn, ws } = await turnAndSession(ctx, turnId!);
      return routed(methods.cancelTurn, ctx, req, () => turns.ownership.ofTurn(turn, ws, { finishedToo: true }), () => turns.cancelTurn(turnId!, () => Promise.resolve(ws)));
    },

    async turnHeartbeat(req, ctx) {
      const c = new Check();
      const turnId = c.uuid("turn_id", req.turnId);
      c.done();
      const { turn, ws } = await turnAndSession(ctx, turnId!);
      // A TurnHeartbeat is activity of the session the turn runs in: it keeps the session connected.
      if (ws.lifecycle === "active" && isSessionActivity(ctx, ws)) registry.touch(ws);
      return routed(methods.turnHeartbeat, ctx, req, () => turns.ownership.ofTurn(turn, ws), async () => ({ current: (await turns.heartbeat(turnId!)).current }));
    },

    // ListTurns, WatchTurns and GetPoolStats are answered here, never forwarded: turns are rows
    // and events in the shared database; the pool is this instance's (docs/turns.md).
    async listTurns(req, ctx) {
      const c = new Check();
      const sessionId = c.uuid("session_id", req.sessionId, false);
      const rule = sessionId ? TURNS_PAGE : RUNNING_TURNS_PAGE;
      const page = readPage(c, rule, req.pageSize, req.pageToken, sessionId ? ["number", "number"] : ["number", "string"]);
      c.done();
      const paths = showsServerPaths(ctx.principal);
      if (sessionId) {
        await owner(ctx)(sessionId);
        const rows = await turns.listTurns(sessionId, page.after as StoredTurnKey | undefined, page.size + 1);
        const { items, nextPageToken } = pageOf(rule, page, rows, (r) => r.key);
        return { turns: items.map((r) => turnToWire(r.turn, paths)), nextPageToken };
      }
      // This instance's running turns are in memory: the caller's are filtered, then paged.
      const before = page.after as TurnKey | undefined;
      const mine = turns.runningTurns().filter((t) => actsFor(ctx.principal, registry.liveWorkspace(t.sessionId)?.agentId) && (!before || compareTurnKeys(turnKey(t), before) < 0));
      const granted = await Promise.all(mine.map((t) => mayUseRepository(registry, ctx.principal, t.repoId)));
      const { items, nextPageToken } = pageOf(rule, page, mine.filter((_, i) => granted[i]).slice(0, page.size + 1), turnKey);
      return { turns: items.map((t) => turnToWire(t, paths)), nextPageToken };
    },

    async *watchTurns(req, ctx) {
      const c = new Check();
      const sessionId = c.uuid("session_id", req.sessionId, false);
      c.done();
      if (sessionId) await owner(ctx)(sessionId);
      const hub = deps.events;
      if (!hub) throw new BerthError("unavailable", "EVENTS_UNAVAILABLE", "event delivery is not running on this server");
      const visible = repositoryVisibility(registry, ctx.principal);
      for await (const event of hub.watch({ kinds: ["turn.*", "env.evicted"], sessionIds: sessionId ? [sessionId] : [] }, ctx.signal)) {
        if (!sessionId) {
          if (!actsFor(ctx.principal, event.agentId)) continue;
          const v = visible(event.repoId);
          if (!(v === true || (v !== false && (await v)))) continue;
        }
        yield { event: eventForCaller(ctx.principal, event) };
      }
    },

    /**
     * The pool of every live instance, summed: a client behind a load balancer sees one pool.
     * Admins only. A forwarded call (or a single process) answers for this instance alone. An
     * instance that cannot be reached is left out and named in the call's log line
     * (`poolStatsUnreachable`).
     */
    async getPoolStats(req, ctx) {
      // The pool is every repository's: operators' information (the forwarded calls check again).
      requireRole(ctx.principal, "admin");
      const local = turns.stats();
      if (forwarder === undefined || isForwarded(ctx)) return local;
      const others = await turns.otherInstances();
      const unreachable: string[] = [];
      const theirs = await Promise.all(others.map(async (o) => {
        if (o.advertise_addr === null) return void unreachable.push(o.id);
        try {
          return await forwarder.forward(methods.getPoolStats, { instanceId: o.id, address: o.advertise_addr }, ctx, req);
        } catch (err) {
          // Only an instance that cannot be reached (dying, or gone) is left out; any other answer
          // (a refusal, a failure) is this call's answer: a silently partial sum would be wrong.
          if (!(err instanceof BerthError && err.reason === "TURN_OWNER_UNREACHABLE")) throw err;
          return void unreachable.push(o.id);
        }
      }));
      if (unreachable.length > 0) ctx.logFields.poolStatsUnreachable = unreachable;
      return theirs.reduce<PoolStats>((sum, s) => (s ? addPoolStats(sum, s) : sum), local);
    },

    async getWorkspaceMap(req, ctx) {
      const c = new Check();
      const sessionId = c.uuid("session_id", req.sessionId);
      c.done();
      const ws = await ownedSession(registry, ctx, sessionId!, "active");
      return routed(methods.getWorkspaceMap, ctx, req, (fresh) => turns.ownership.ofSession(ws, { fresh }), async () => {
        const map = await deps.turns.workspaceMap(ws, ctx.signal);
        return responseWithMap(GetWorkspaceMapResponseSchema, {}, "workspaceMap", map);
      });
    },
  };
}
