/** The claim.* events of released or acquired claims: one event per (session, path). */
import type { EventInput } from "../platform/outbox.js";
import type { ClaimRow } from "./claims.repository.js";

export function claimEvents(kind: "claim.acquired" | "claim.released", rows: readonly ClaimRow[], at: number, reason = "", changesetId?: string): EventInput[] {
  const groups = new Map<string, { row: ClaimRow; symbols: string[] }>();
  for (const row of rows) {
    const key = `${row.workspace_id}\u0000${row.path}`;
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { row, symbols: [] }));
    g.symbols.push(row.symbol);
  }
  return [...groups.values()].map(({ row, symbols }) => ({
    kind,
    repoId: row.repo_id,
    sessionId: row.session_id,
    workspaceId: row.workspace_id,
    agentId: row.agent_id,
    ...(changesetId ?? row.changeset_id ? { changesetId: changesetId ?? row.changeset_id } : {}),
    occurredAt: at,
    reason,
    payload: { case: "claimChanged", value: { path: row.path, symbols } },
  }));
}
