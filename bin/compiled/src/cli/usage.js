const checks = new WeakMap();
/** Adds a rule to `command`: `check` answers the usage error's message, or undefined when all is well. */
export function usageRule(command, check) {
    checks.set(command, [...(checks.get(command) ?? []), check]);
    return command;
}
/** The message commander gives a missing required option, and what else would do. */
export function missingOption(flags, otherwise) {
    return `error: required option '${flags}' not specified (${otherwise})`;
}
/** Runs the rules of the command about to run (a preAction hook); the first broken one ends it. */
export function checkUsage(command) {
    for (const check of checks.get(command) ?? []) {
        const message = check(command);
        if (message !== undefined)
            command.error(message, { exitCode: 2, code: "berth.usage" });
    }
}
