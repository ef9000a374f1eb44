/**
 * The one program `berth run` starts: the user's command, under bubblewrap (bwrap) unless told
 * otherwise. The CLI's only child process (eslint.config.js allows it here and nowhere else in
 * cli/): how the sandbox is built, probed and signalled is in this module alone.
 */
import { spawn } from "node:child_process";
import { accessSync, constants, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { BWRAP, bwrapArgs } from "../platform/sandbox.js";
/**
 * Where `command` would be run from, or undefined when there is no such program: a name is
 * looked up on PATH, a path (with a slash) taken relative to cwd. `run` refuses before
 * starting anything (exit 127, as a shell does) rather than let bwrap say it.
 */
export function findProgram(command, cwd, env) {
    const candidates = command.includes("/") ? [path.resolve(cwd, command)] : (env.PATH ?? "").split(":").filter(Boolean).map((d) => path.join(d, command));
    let found;
    for (const c of candidates) {
        try {
            if (!statSync(c).isFile())
                continue;
        }
        catch {
            continue;
        }
        try {
            accessSync(c, constants.X_OK);
            return { path: c, executable: true };
        }
        catch {
            found ??= c;
        }
    }
    return found === undefined ? undefined : { path: found, executable: false };
}
/** The running command: signals reach it (inside the sandbox, the command itself, not bwrap). */
export class RunningCommand {
    exited;
    child;
    /** Inside the sandbox: the host pid of the namespace's init (bwrap's), once bwrap has said it. */
    init;
    constructor(launch) {
        const sandboxed = launch.sandbox !== undefined;
        const [file, args] = sandboxed
            ? [BWRAP, [...bwrapArgs(launch.sandbox, launch.cwd), "--info-fd", "3", "--", launch.command, ...launch.args]]
            : [launch.command, [...launch.args]];
        // stdin, stdout and stderr are the user's (an interactive agent works); fd 3 is bwrap's report.
        this.child = spawn(file, args, { cwd: launch.cwd, env: launch.env, stdio: sandboxed ? ["inherit", "inherit", "inherit", "pipe"] : "inherit" });
        this.exited = new Promise((resolve, reject) => {
            this.child.once("error", reject);
            this.child.once("exit", (code, signal) => resolve({ code, signal }));
        });
        this.init = sandboxed ? readInfo(this.child) : Promise.resolve(undefined);
    }
    /**
     * Sends `signal` to the command. bwrap forwards no signal, and the namespace's init (bwrap,
     * PID 1 inside) takes none it has no handler for; so the command — init's one child — is
     * signalled by its host pid. SIGKILL goes to init: the whole PID namespace dies with it.
     */
    async signal(signal) {
        if (this.child.exitCode !== null || this.child.signalCode !== null)
            return;
        const init = await this.init;
        if (init === undefined) {
            this.child.kill(signal);
            return;
        }
        let target = init;
        // Just after the sandbox is built, init may not have started the command yet.
        for (let tries = 0; signal !== "SIGKILL" && target === init && tries < 40; tries++) {
            let children;
            try {
                children = readFileSync(`/proc/${init}/task/${init}/children`, "utf8").trim();
            }
            catch {
                return; // init is gone: the command has exited, nothing to signal
            }
            if (children)
                target = Number(children.split(/\s+/)[0]);
            else
                await new Promise((r) => setTimeout(r, 25));
        }
        try {
            process.kill(target, signal);
        }
        catch (err) {
            if (err.code !== "ESRCH")
                throw err;
        }
    }
}
/** bwrap's --info-fd report: {"child-pid": N, …}, written once the sandbox is built. */
function readInfo(child) {
    const stream = child.stdio[3];
    if (!stream)
        return Promise.resolve(undefined);
    return new Promise((resolve) => {
        let text = "";
        stream.on("data", (d) => {
            text += d.toString();
            const m = /"child-pid":\s*(\d+)/.exec(text);
            if (m)
                resolve(Number(m[1]));
        });
        stream.on("end", () => resolve(undefined));
        stream.on("error", () => resolve(undefined));
    });
}
