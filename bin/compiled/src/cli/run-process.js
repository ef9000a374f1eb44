/**
 * The one program `berth run` starts: the user's command, under bubblewrap (bwrap) unless told
 * otherwise. The CLI's only child process (eslint.config.js allows it here and nowhere else in
 * cli/): how the sandbox is built, probed and signalled is in this module alone.
 */
import { spawn, spawnSync } from "node:child_process";
import { accessSync, constants, readFileSync, statSync } from "node:fs";
import path from "node:path";
const BWRAP = "bwrap";
/** Whether bwrap can build a sandbox here: undefined when it can, else why not. */
export function sandboxUnavailable() {
    const probe = spawnSync(BWRAP, ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--die-with-parent", "true"], { stdio: ["ignore", "ignore", "pipe"], timeout: 10_000 });
    if (probe.error) {
        return probe.error.code === "ENOENT"
            ? "bubblewrap (bwrap) is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
            : `bubblewrap (bwrap) could not be started: ${probe.error.message}`;
    }
    if (probe.status !== 0) {
        const said = probe.stderr.toString().trim();
        return `bubblewrap (bwrap) cannot create a sandbox here (user namespaces off? see sysctl kernel.unprivileged_userns_clone / user.max_user_namespaces)${said ? `: ${said}` : ""}`;
    }
    return undefined;
}
/** A mirror's object store relative to the data directory that holds it (src/repository/mirror.ts names mirrors by repository id). */
const MIRROR_OBJECTS = /^mirrors\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.git\/objects$/;
const inside = (child, parent) => child === parent || child.startsWith(parent.endsWith("/") ? parent : `${parent}/`);
/**
 * bwrap's arguments. Order matters (later mounts cover earlier ones): the system read-only, a
 * fresh /dev and /proc (this PID namespace's processes only: no other process's environ or
 * command line), a private /tmp, then the hidden paths, the readable ones (outside every hidden
 * path), then the environment bound read-write
 * over whatever hid it (its parent, the environment root, is hidden), then what is hidden
 * inside it, then the files shown.
 */
export function bwrapArgs(plan, cwd) {
    const args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--unshare-pid", "--die-with-parent"];
    if (!plan.network)
        args.push("--unshare-net");
    const hideOne = (p) => {
        let dir;
        try {
            dir = statSync(p).isDirectory();
        }
        catch {
            return; // nothing there: nothing to hide
        }
        args.push(...(dir ? ["--tmpfs", p] : ["--ro-bind", "/dev/null", p]));
    };
    const hides = [...new Set(plan.hide.map((p) => path.resolve(p)))].filter((p) => !inside("/tmp", p)).sort((a, b) => a.length - b.length);
    for (const p of hides.filter((h) => !inside(h, plan.writable)))
        hideOne(p);
    // Neither in nor over a hidden path (nor the environment): the list comes from a file the agent can edit.
    // One exception, exactly: the object store of a mirror of a git server in a hidden data
    // directory (<BERTH_DATA_DIR>/mirrors/<repo_id>.git/objects), which is what a registered
    // repository's objects are for an environment of a repository on a git server.
    const overlaps = (p, q) => inside(p, q) || inside(q, p);
    const mirrorObjects = (p) => hides.some((h) => MIRROR_OBJECTS.test(path.relative(h, p)));
    for (const p of plan.readable.map((r) => path.resolve(r))) {
        if ((!hides.some((h) => overlaps(p, h)) || mirrorObjects(p)) && !overlaps(p, plan.writable) && !inside("/tmp", p))
            args.push("--ro-bind-try", p, p);
    }
    args.push("--bind", plan.writable, plan.writable);
    for (const p of hides.filter((h) => inside(h, plan.writable)))
        hideOne(p);
    for (const f of plan.files)
        args.push("--ro-bind", f.host, f.inside);
    args.push("--chdir", cwd);
    return args;
}
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
