/**
 * ResolveIdPrefix (issue 27): the ids that start with a short prefix, so that a client may take
 * the 8-character ids the console and the events show. Only ids the caller may act on are
 * answered — an agent's own sessions, workspaces and turns, the changesets it works on and their
 * review comments
 * (./session-access.ts actsFor, ./authorize.ts requireChangesetMember), in repositories it is
 * granted — so a prefix tells nobody of another agent's ids. Read from PostgreSQL, never from an
 * instance's memory: every instance answers alike.
 */
import { IdKind, type WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { unauthenticated } from "../platform/errors.js";
import { idsWithPrefix, type PrefixMatch, type PrefixQuery } from "../sessions/id-prefixes.js";
import { turnIdsWithPrefix } from "../turns/store.js";
import { actsForAnyone, mayUseRepository } from "./authorize.js";
import type { ServiceHandlers } from "./handler.js";
import { Check } from "./validate.js";
import type { WorkspaceServiceDeps } from "./workspace-deps.js";

/** Ids answered at most: enough to show the user what a prefix is ambiguous between. */
const MAX_IDS = 10;

export function idPrefixHandler(deps: WorkspaceServiceDeps): Pick<ServiceHandlers<typeof WorkspaceService>, "resolveIdPrefix"> {
  const { registry } = deps;
  const read = (kind: IdKind, q: PrefixQuery): Promise<PrefixMatch[]> => {
    switch (kind) {
      case IdKind.TURN:
        return turnIdsWithPrefix(registry.db, q);
      case IdKind.WORKSPACE:
        return idsWithPrefix(registry.db, "workspace", q);
      case IdKind.CHANGESET:
        return idsWithPrefix(registry.db, "changeset", q);
      case IdKind.COMMENT:
        return idsWithPrefix(registry.db, "comment", q);
      case IdKind.SESSION:
      case IdKind.UNSPECIFIED: // refused by the Check before any read
        return idsWithPrefix(registry.db, "session", q);
    }
  };
  return {
    async resolveIdPrefix(req, ctx) {
      const c = new Check();
      const kind = c.enumValue("kind", req.kind, IdKind);
      const bounds = c.uuidPrefix("prefix", req.prefix);
      c.done();
      const p = ctx.principal;
      const anyone = actsForAnyone(p);
      if (!anyone && p.agentId === undefined) throw unauthenticated("TOKEN_MISSING", "this call needs an authenticated agent");
      const agentId = anyone ? undefined : p.agentId;
      // The agent's ids come from the index; its grants are checked per repository here, reading
      // on past ids of a repository no longer granted until the answer is full or the range ends.
      const granted = new Map<string, Promise<boolean>>();
      const visible: string[] = [];
      let after: string | undefined;
      for (;;) {
        const batch = await read(kind!, { bounds: bounds!, after, agentId, limit: MAX_IDS + 1 });
        for (const m of batch) {
          if (!anyone && !granted.has(m.repoId)) granted.set(m.repoId, mayUseRepository(registry, p, m.repoId));
          if (anyone || (await granted.get(m.repoId))) visible.push(m.id);
        }
        if (visible.length > MAX_IDS || batch.length <= MAX_IDS) break;
        after = batch[batch.length - 1]!.id;
      }
      return { ids: visible.slice(0, MAX_IDS), more: visible.length > MAX_IDS };
    },
  };
}
