/**
 * Ids on the command line: a whole UUID, or its start — the 8 characters the console, the
 * events and `berth events watch` show — when that names exactly one id the caller may act on.
 * The server says which ids start so (ResolveIdPrefix, from PostgreSQL: the same answer whichever
 * instance is asked); a prefix that names none, or several, is a usage error (exit 2) that says
 * so and lists the ids it could mean.
 *
 * Arguments and options that take an existing id are declared with idArgument / idOption;
 * resolveDeclaredIds, run as a preAction hook, replaces their values before the action runs, so
 * no command handles prefixes itself. What is not prefix-shaped (not hex digits and dashes) is
 * passed on as given, for the server to refuse by name as before.
 */
import { Argument, Option } from "commander";
import { BadRequestSchema, Code, ConnectError, IdKind } from "@berth/client";
import { cliFor } from "./client.js";
import { UsageError } from "./output.js";
const KINDS = {
    session: IdKind.SESSION,
    workspace: IdKind.WORKSPACE,
    turn: IdKind.TURN,
    changeset: IdKind.CHANGESET,
    comment: IdKind.COMMENT,
};
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Could be the start of a UUID; the server checks the rest (the dashes' places, at least 4 digits). */
const PREFIX_LIKE = /^[0-9a-f][0-9a-f-]*$/i;
/** Which id each declared argument and option takes. */
const declared = new WeakMap();
/** A positional argument taking an id of `kind` (a prefix is resolved before the action). */
export function idArgument(kind, name, description) {
    const arg = new Argument(name, description);
    declared.set(arg, kind);
    return arg;
}
/** An option taking an id of `kind` (a prefix is resolved before the action). */
export function idOption(kind, flags, description) {
    const option = new Option(flags, description);
    declared.set(option, kind);
    return option;
}
/**
 * The one id `raw` names: itself when it is a whole UUID (or not prefix-shaped: the server will
 * say what is wrong with it), else the single id of `kind` it starts. Reports and throws (exit 2)
 * when it names none or several.
 */
export async function resolveId(cli, kind, raw) {
    if (UUID.test(raw) || !PREFIX_LIKE.test(raw))
        return raw;
    const res = await cli.call(`resolving the ${kind} id`, () => cli.workspaces.resolveIdPrefix({ kind: KINDS[kind], prefix: raw }).catch((err) => {
        // The server's rule on a prefix (at least 4 hex digits, dashes in place) is about this argument: a usage error.
        const bad = err instanceof ConnectError && err.code === Code.InvalidArgument ? err.findDetails(BadRequestSchema)[0]?.fieldViolations.find((v) => v.field === "prefix") : undefined;
        throw bad ? new UsageError(`${kind} id "${raw}": ${bad.description}`, { reason: "INVALID_ID_PREFIX", details: { kind, prefix: raw } }) : err;
    }));
    if (res.ids.length === 1 && !res.more)
        return res.ids[0];
    if (res.ids.length === 0) {
        throw cli.fail(new UsageError(`no ${kind} id starts with "${raw}"`, { reason: "NO_MATCHING_ID", details: { kind, prefix: raw, matches: [] } }));
    }
    const count = res.more ? `more than ${res.ids.length}` : String(res.ids.length);
    throw cli.fail(new UsageError(`"${raw}" is ambiguous: ${count} ${kind} ids start with it; give more of the id`, {
        reason: "AMBIGUOUS_ID",
        details: { kind, prefix: raw, matches: res.ids, ...(res.more ? { more: true } : {}) },
        lines: [...res.ids, ...(res.more ? ["…"] : [])],
    }));
}
/** Resolves the declared id arguments and options of the command about to run (a preAction hook). */
export async function resolveDeclaredIds(command) {
    let cli;
    const resolve = (kind, raw) => resolveId((cli ??= cliFor(command)), kind, raw);
    const args = command.registeredArguments;
    for (let i = 0; i < args.length; i++) {
        const kind = declared.get(args[i]);
        const value = command.processedArgs[i];
        if (kind !== undefined && typeof value === "string")
            command.processedArgs[i] = await resolve(kind, value);
    }
    for (const option of command.options) {
        const kind = declared.get(option);
        const key = option.attributeName();
        const value = command.getOptionValue(key);
        if (kind !== undefined && typeof value === "string")
            command.setOptionValueWithSource(key, await resolve(kind, value), command.getOptionValueSource(key) ?? "cli");
    }
}
