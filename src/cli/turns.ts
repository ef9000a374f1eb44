/** berth turn begin|end|cancel|watch|ls, berth pool, berth map — the TurnService from the command line. */
import { InvalidArgumentError, type Command } from "commander";
import { BeginTurnResponseSchema, CancelTurnResponseSchema, EndTurnResponseSchema, EventSchema, GetPoolStatsResponseSchema, GetWorkspaceMapResponseSchema, ListTurnsResponseSchema, MapStatus, OnBusy, TurnOutcome, TurnState } from "@berth/client";
import { eventLine } from "./events.js";
import { create } from "@bufbuild/protobuf";
import { allPages, cliFor } from "./client.js";
import { CliExit, EXIT, enumName, formatTime, jsonLine, keyValues, paint, print, table, type Colour } from "./output.js";
import { idArgument, idOption } from "./ids.js";

const OUTCOMES: Record<string, TurnOutcome> = { completed: TurnOutcome.COMPLETED, "awaiting-approval": TurnOutcome.AWAITING_APPROVAL, failed: TurnOutcome.FAILED };

function parseOutcome(raw: string): TurnOutcome {
  const found = OUTCOMES[raw.trim().toLowerCase().replace(/_/g, "-")];
  if (found === undefined) throw new InvalidArgumentError(`expected one of ${Object.keys(OUTCOMES).join(", ")}`);
  return found;
}

const TURN_COLOUR: Record<string, Colour> = { RUNNING: "green", ENDED: "grey", SUPERSEDED: "yellow", CANCELLED: "red" };

export function registerTurns(program: Command): void {
  const turns = program.command("turn").alias("turns").description("agents' turns in their warm environments");

  turns
    .command("begin")
    .description("begin a turn: reserve the session's environment, warm when possible (BeginTurn)")
    .addArgument(idArgument("session", "<session>", "the session id"))
    .option("--id <client-turn-id>", "your id for the turn: a retried begin with the same id returns the same turn")
    .option("--reject-if-busy", "refuse (TURN_IN_PROGRESS) instead of superseding a running turn")
    .option("--map", "print the workspace map too")
    .option("-q, --quiet", "print only the turn's id (T=$(berth turn begin … -q))")
    .action(async (sessionId: string, opts: { id?: string; rejectIfBusy?: boolean; map?: boolean; quiet?: boolean }, command: Command) => {
      const cli = cliFor(command);
      const onBusy = opts.rejectIfBusy ? OnBusy.REJECT : OnBusy.SUPERSEDE;
      const res = await cli.call("beginning the turn", () => cli.turns.beginTurn({ sessionId, clientTurnId: opts.id ?? "", onBusy }));
      if (opts.quiet) return print(res.turnId);
      if (cli.json) return print(jsonLine(BeginTurnResponseSchema, res));
      print(
        keyValues([
          ["turn", res.turnId],
          ["environment", res.environmentPath],
          ["warm", res.warm ? "yes" : "no"],
          ["superseded", res.supersededTurnId],
        ]),
      );
      if (opts.map && res.workspaceMap?.text) print(res.workspaceMap.text);
    });

  turns
    .command("end")
    .description("end a turn: capture the directory's changes into the overlay (EndTurn)")
    .addArgument(idArgument("turn", "<turn>", "the turn id"))
    .option("--outcome <outcome>", "completed, awaiting-approval or failed", parseOutcome, TurnOutcome.COMPLETED)
    .action(async (turnId: string, opts: { outcome: TurnOutcome }, command: Command) => {
      const cli = cliFor(command);
      const res = await cli.call("ending the turn", () => cli.turns.endTurn({ turnId, outcome: opts.outcome }));
      if (cli.json) return print(jsonLine(EndTurnResponseSchema, res));
      print(
        keyValues([
          ["turn", turnId],
          ["outcome", enumName(TurnOutcome, res.turn?.outcome ?? TurnOutcome.UNSPECIFIED, "").toLowerCase()],
          ["captured", res.capturedPaths.join(", ")],
          ["left out", res.leftOut.map((l) => `${l.path} (${l.reason})`).join(", ")],
        ]),
      );
    });

  turns
    .command("cancel")
    .description("cancel a running turn (CancelTurn)")
    .addArgument(idArgument("turn", "<turn>", "the turn id"))
    .action(async (turnId: string, _opts: unknown, command: Command) => {
      const cli = cliFor(command);
      const res = await cli.call("cancelling the turn", () => cli.turns.cancelTurn({ turnId }));
      if (cli.json) return print(jsonLine(CancelTurnResponseSchema, res));
      print(keyValues([["turn", turnId], ["cancelled", res.cancelled ? "yes" : "no (it was not running)"], ["settled", res.settled ? "yes" : "no"]]));
    });

  turns
    .command("watch")
    .description("a live tail of turn and environment events (WatchTurns) until Ctrl-C")
    .addOption(idOption("session", "--session <id>", "only this session"))
    .action(async (opts: { session?: string }, command: Command) => {
      const cli = cliFor(command);
      process.once("SIGINT", () => process.exit(0));
      try {
        for await (const { event } of cli.turns.watchTurns({ sessionId: opts.session ?? "" })) {
          if (event) print(cli.json ? jsonLine(EventSchema, event) : eventLine(event));
        }
      } catch (err) {
        throw cli.fail(err);
      }
    });

  turns
    .command("ls")
    .description("list the turns of a session, or the running turns of the instance the call reaches (ListTurns; behind a load balancer, one instance)")
    .addOption(idOption("session", "--session <id>", "only this session"))
    .action(async (opts: { session?: string }, command: Command) => {
      const cli = cliFor(command);
      const turns = await allPages((pageToken) =>
        cli.call("listing turns", () => cli.turns.listTurns({ sessionId: opts.session ?? "", pageToken })).then((r) => ({ items: r.turns, nextPageToken: r.nextPageToken })),
      );
      const res = create(ListTurnsResponseSchema, { turns });
      if (cli.json) return print(jsonLine(ListTurnsResponseSchema, res));
      if (res.turns.length === 0) return print(opts.session ? "no turns" : "no running turns");
      print(
        table(
          ["TURN", "SESSION", "STATE", "OUTCOME", "EXIT", "WARM", "STARTED", "ENDED", "ENVIRONMENT"],
          res.turns.map((t) => {
            const state = enumName(TurnState, t.state, "");
            return [
              t.turnId,
              t.sessionId,
              paint(TURN_COLOUR[state], state),
              t.outcome === TurnOutcome.UNSPECIFIED ? "-" : enumName(TurnOutcome, t.outcome, ""),
              t.exitSignal || (t.exitCode !== undefined ? String(t.exitCode) : "-"),
              t.warm ? "yes" : "no",
              formatTime(t.startedAt),
              formatTime(t.endedAt) || "-",
              t.environmentPath,
            ];
          }),
        ),
      );
    });

  program
    .command("pool")
    .description("the environment pool's occupancy and counters (GetPoolStats)")
    .action(async (_opts: unknown, command: Command) => {
      const cli = cliFor(command);
      const res = await cli.call("reading pool stats", () => cli.turns.getPoolStats({}));
      if (cli.json) return print(jsonLine(GetPoolStatsResponseSchema, res));
      const seated = res.busy + res.idle + res.awaitingApproval;
      const evictions = Object.entries(res.evictions).sort(([a], [b]) => a.localeCompare(b));
      print(
        keyValues([
          ["occupancy", `${seated} of ${res.capacity}`],
          ["busy", String(res.busy)],
          ["idle", String(res.idle)],
          ["awaiting approval", String(res.awaitingApproval)],
          ["warm acquires", res.warmAcquires.toString()],
          ["cold acquires", res.coldAcquires.toString()],
          ["unreserved turns", res.unreservedTurns.toString()],
          ["evictions", evictions.length === 0 ? "none" : evictions.map(([reason, n]) => `${reason}=${n}`).join(", ")],
        ]),
      );
    });

  program
    .command("map")
    .description("print a session's workspace map (GetWorkspaceMap)")
    .addArgument(idArgument("session", "<session>", "the session id"))
    .action(async (sessionId: string, _opts: unknown, command: Command) => {
      const cli = cliFor(command);
      const res = await cli.call("walking the workspace", () => cli.turns.getWorkspaceMap({ sessionId }));
      if (cli.json) return print(jsonLine(GetWorkspaceMapResponseSchema, res));
      const map = res.workspaceMap!;
      const status = enumName(MapStatus, map.status, "MAP_STATUS_");
      if (map.text) print(map.text);
      if (map.status !== MapStatus.OK) process.stderr.write(`berth: map ${status}${map.reason ? `: ${map.reason}` : ""}\n`);
      // No map at all (over budget, skipped, failed): a script should notice.
      if (!map.text) throw new CliExit(EXIT.serverError);
    });
}
