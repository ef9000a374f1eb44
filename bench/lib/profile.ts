/** Summarises V8 .cpuprofile files (node --cpu-prof): self time by function and by module. */
import { readFileSync, readdirSync } from "node:fs";
import path from "node:path";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
}

function moduleOf(url: string): string {
  if (!url) return "(native / idle / gc)";
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) return nm[1]!;
  if (url.startsWith("node:")) return url.split("/").slice(0, 2).join("/");
  const m = /\/(src|gen|bench)\/(.*)$/.exec(url);
  return m ? `${m[1]}/${m[2]}` : url;
}

export function summarizeProfile(file: string, top = 25): string {
  const p = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const total = p.samples.length;
  const byFn = new Map<string, number>();
  const byModule = new Map<string, number>();
  for (const n of p.nodes) {
    const hits = n.hitCount ?? 0;
    if (!hits) continue;
    const { functionName, url, lineNumber } = n.callFrame;
    const key = `${functionName || "(anonymous)"}  ${moduleOf(url)}${url ? `:${lineNumber + 1}` : ""}`;
    byFn.set(key, (byFn.get(key) ?? 0) + hits);
    const mod = functionName === "(idle)" ? "(idle)" : functionName === "(garbage collector)" ? "(garbage collector)" : functionName === "(program)" ? "(program)" : moduleOf(url);
    byModule.set(mod, (byModule.get(mod) ?? 0) + hits);
  }
  const pct = (n: number) => `${((100 * n) / total).toFixed(1).padStart(5)}%`;
  const lines = [`${path.basename(file)}: ${total} samples over ${((p.endTime - p.startTime) / 1e6).toFixed(1)} s`, "", "self time by module:"];
  for (const [k, v] of [...byModule].sort((a, b) => b[1] - a[1]).slice(0, 20)) lines.push(`  ${pct(v)}  ${k}`);
  lines.push("", "self time by function:");
  for (const [k, v] of [...byFn].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`  ${pct(v)}  ${k}`);
  return lines.join("\n");
}

/** The newest .cpuprofile files in dir. */
export function profilesIn(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith(".cpuprofile"))
    .map((f) => path.join(dir, f));
}
