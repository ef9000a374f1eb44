/** berth turns ls, berth pool, berth map — the TurnService views. */
import type { Command } from "commander";
import {
  GetPoolStatsResponseSchema,
  GetWorkspaceMapResponseSchema,
  ListTurnsResponseSchema,
  MapStatus,
  TurnState,
} from "../../gen/berth/v1/turn_service_pb.js";
import { TurnOutcome } from "../../gen/berth/v1/types_pb.js";
import { cliFor } from "./client.js";
import { CliExit, EXIT, enumName, formatTime, jsonLine, keyValues, paint, print, table, type Colour } from "./output.js";

const TURN_COLOUR: Record<string, Colour> = { RUNNING: "green", ENDED: "grey", SUPERSEDED: "yellow", CANCELLED: "red" };

export function registerTurns(program: Command): void {
  const turns = program.command("turns").description("agents' turns in their warm environments");

  turns
    .command("ls")
    .description("list the turns of a session, or every running turn of the server (ListTurns)")
    .option("--session <id>", "only this session")
    .action(async (opts: { session?: string }, command: Command) => {
      const cli = cliFor(command);
      const res = await cli.call("listing turns", () => cli.turns.listTurns({ sessionId: opts.session ?? "" }));
      if (cli.json) return print(jsonLine(ListTurnsResponseSchema, res));
      if (res.turns.length === 0) return print(opts.session ? "no turns" : "no running turns");
      print(
        table(
          ["TURN", "SESSION", "STATE", "OUTCOME", "WARM", "STARTED", "ENDED", "ENVIRONMENT"],
          res.turns.map((t) => {
            const state = enumName(TurnState, t.state, "");
            return [
              t.turnId,
              t.sessionId,
              paint(TURN_COLOUR[state], state),
              t.outcome === TurnOutcome.UNSPECIFIED ? "-" : enumName(TurnOutcome, t.outcome, ""),
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
    .argument("<session>", "the session id")
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
