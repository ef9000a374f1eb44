/**
 * Where the berth package is installed and its version: found by walking up from this module
 * to the package.json named "berth", the same from src/cli/ (tsx) and bin/compiled/src/cli/.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
function findRoot() {
    for (let dir = path.dirname(fileURLToPath(import.meta.url));; dir = path.dirname(dir)) {
        try {
            const pkg = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8"));
            if (pkg.name === "berth")
                return { root: dir, version: pkg.version ?? "0.0.0" };
        }
        catch {
            // no package.json here: keep walking up
        }
        if (path.dirname(dir) === dir)
            throw new Error("berth: cannot find the berth package.json above " + fileURLToPath(import.meta.url));
    }
}
const found = findRoot();
/** The package's directory (the repository root in a checkout). */
export const ROOT = found.root;
export const VERSION = found.version;
