/**
 * The bubblewrap (bwrap) sandbox, built the same way for every command Berth confines: `berth
 * run`'s agent (src/cli/run-process.ts) and a repository's check on VERIFYING
 * (src/verification/). What the command may see and write is decided here alone
 * (docs/security.md, "berth run's sandbox"); eslint.config.js lets this module start programs.
 */
import { spawn, spawnSync } from "node:child_process";
import { statSync } from "node:fs";
import path from "node:path";
export const BWRAP = "bwrap";
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
 * Runs `cmd` under bwrap in a process group of its own: on the timeout (or kill()) the group gets
 * SIGKILL, and the sandbox's PID namespace dies with its init (--die-with-parent), so nothing the
 * command forked outlives it. Resolves once its output pipes are drained.
 */
export function runConfined(cmd) {
    const child = spawn(BWRAP, [...bwrapArgs(cmd.plan, cmd.cwd), "--new-session", "--", ...cmd.argv], { cwd: cmd.cwd, env: cmd.env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    let timedOut = false;
    const killGroup = () => {
        if (child.pid === undefined)
            return;
        try {
            process.kill(-child.pid, "SIGKILL");
        }
        catch (err) {
            if (err.code !== "ESRCH")
                throw err;
        }
    };
    const timer = setTimeout(() => {
        timedOut = true;
        killGroup();
    }, cmd.timeoutMs);
    child.stdout.on("data", cmd.onOutput);
    child.stderr.on("data", cmd.onOutput);
    const exited = new Promise((resolve, reject) => {
        child.once("error", (err) => {
            clearTimeout(timer);
            reject(err);
        });
        child.once("close", (code, signal) => {
            clearTimeout(timer);
            resolve({ code, signal, timedOut });
        });
    });
    return { exited, kill: killGroup };
}
