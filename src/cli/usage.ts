/**
 * Usage rules commander cannot state (a flag required unless the environment gives it, one of
 * an argument or a flag), checked before the command runs — before ids are resolved or anything
 * is asked of the server — and reported as commander reports its own: a line naming the flag,
 * the command's help, exit 2 (one JSON line with --json).
 */
import type { Command } from "commander";

type Check = (command: Command) => string | undefined;

const checks = new WeakMap<Command, Check[]>();

/** Adds a rule to `command`: `check` answers the usage error's message, or undefined when all is well. */
export function usageRule(command: Command, check: Check): Command {
  checks.set(command, [...(checks.get(command) ?? []), check]);
  return command;
}

/** The message commander gives a missing required option, and what else would do. */
export function missingOption(flags: string, otherwise: string): string {
  return `error: required option '${flags}' not specified (${otherwise})`;
}

/** Runs the rules of the command about to run (a preAction hook); the first broken one ends it. */
export function checkUsage(command: Command): void {
  for (const check of checks.get(command) ?? []) {
    const message = check(command);
    if (message !== undefined) command.error(message, { exitCode: 2, code: "berth.usage" });
  }
}
