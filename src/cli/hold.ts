/**
 * berth heartbeat and berth attach — keep a session connected from the command line: an
 * ephemeral workspace is stranded once its lease (BERTH_SESSION_LEASE_MS, 30 s by default)
 * passes with no heartbeat, no call naming it, no open attach and no running turn. Both hold
 * the session until Ctrl-C (SIGINT) or SIGTERM, through @berth/client's hold().
 */
import type { Command } from "commander";
import { ConnectError, EventSchema, WorkspaceSchema, type SessionHold } from "@berth/client";
import { cliFor, type Cli } from "./client.js";
import { jsonLine, note, print } from "./output.js";
import { eventLine } from "./events.js";
import { codeName } from "../transport/status.js";
import { idArgument } from "./ids.js";

/** Holds until a signal (exit 0) or the hold ends by itself (the session stopped being active: exit 1). */
async function holdUntilSignal(cli: Cli, hold: SessionHold, sessionId: string): Promise<void> {
  const stopped = new Promise<"signal">((resolve) => {
    for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => resolve("signal"));
  });
  let outcome: "signal" | "ended";
  try {
    outcome = await Promise.race([stopped, hold.done.then(() => "ended" as const)]);
  } catch (err) {
    throw cli.fail(err);
  }
  await hold.close();
  if (outcome === "ended") {
    note(`session ${sessionId} is no longer active`);
    process.exitCode = 1;
  }
}

function retried(err: unknown): void {
  note(`${err instanceof ConnectError ? codeName(err.code) : String(err)}; retrying`);
}

export function registerHold(program: Command): void {
  program
    .command("heartbeat")
    .description("keep a session connected with a Heartbeat every third of its lease, until Ctrl-C (--once: one heartbeat)")
    .addArgument(idArgument("session", "<session>", "the session id"))
    .option("--once", "send one heartbeat, print the lease and exit")
    .action(async (sessionId: string, opts: { once?: boolean }, command: Command) => {
      const cli = cliFor(command);
      if (opts.once) {
        const res = await cli.call("heartbeating", () => cli.workspaces.heartbeat({ sessionId }));
        return print(cli.json ? JSON.stringify({ leaseMs: res.leaseMs }) : `session ${sessionId} connected for ${res.leaseMs} ms`);
      }
      const hold = cli.hold(sessionId, { via: "heartbeat", onRetry: retried });
      await hold.ready;
      if (hold.leaseMs !== undefined) print(cli.json ? JSON.stringify({ leaseMs: hold.leaseMs }) : `holding session ${sessionId} (lease ${hold.leaseMs} ms) until Ctrl-C`);
      await holdUntilSignal(cli, hold, sessionId);
    });

  program
    .command("attach")
    .description("hold a session connected with an AttachSession stream until Ctrl-C, printing its notices; exits 1 when the session stops being active")
    .addArgument(idArgument("session", "<session>", "the session id"))
    .action(async (sessionId: string, _opts: unknown, command: Command) => {
      const cli = cliFor(command);
      const hold = cli.hold(sessionId, {
        via: "attach",
        onRetry: retried,
        onEvent: (event) => print(cli.json ? jsonLine(EventSchema, event) : eventLine(event)),
      });
      await hold.ready;
      if (hold.workspace) print(cli.json ? jsonLine(WorkspaceSchema, hold.workspace) : `attached to session ${sessionId} (workspace ${hold.workspace.workspaceId}) until Ctrl-C`);
      await holdUntilSignal(cli, hold, sessionId);
    });
}
