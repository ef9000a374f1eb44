/**
 * ListClaims (issue 17): the claims one session holds, for the console's session view. The
 * session's claims are few (each was taken by one of its writes or ClaimSymbols calls), so they
 * are read whole and paged by (path, symbol).
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { ClaimSchema, WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { BerthError } from "../platform/errors.js";
import type { ClaimInfo } from "../overlay/claiming.js";
import type { ServiceHandlers } from "./handler.js";
import { pageOf, readPage, type PageRule } from "./pagination.js";
import { ownedSession } from "./session-access.js";
import { Check } from "./validate.js";
import type { WorkspaceServiceDeps } from "./workspace-deps.js";

const CLAIMS_PAGE: PageRule = { list: "claims", defaultSize: 1000, maxSize: 10_000 };

export function claimToWire(claim: ClaimInfo): MessageInitShape<typeof ClaimSchema> {
  return {
    repoId: claim.repoId,
    path: claim.path,
    symbol: claim.symbol,
    sessionId: claim.sessionId,
    agentId: claim.agentId,
    agentName: claim.agentName,
    acquiredAt: timestampFromMs(claim.acquiredAt),
    notYetDefined: claim.notYetDefined,
  };
}

const byPathThenSymbol = (a: ClaimInfo, b: ClaimInfo): number => (a.path !== b.path ? (a.path < b.path ? -1 : 1) : a.symbol < b.symbol ? -1 : a.symbol > b.symbol ? 1 : 0);

export function claimListHandler(deps: WorkspaceServiceDeps): Pick<ServiceHandlers<typeof WorkspaceService>, "listClaims"> {
  return {
    async listClaims(req, ctx) {
      const c = new Check();
      const sessionId = c.uuid("session_id", req.sessionId);
      const page = readPage(c, CLAIMS_PAGE, req.pageSize, req.pageToken, ["string", "string"]);
      c.done();
      if (!deps.overlay) throw new BerthError("unimplemented", "UNIMPLEMENTED", "the overlay is not configured on this server");
      // Any lifecycle: a stranded session's answer is that it holds nothing (stranding released them).
      const ws = await ownedSession(deps.registry, ctx, sessionId!, "any");
      const after = page.after as readonly [string, string] | undefined;
      const claims = (ws.lifecycle === "active" ? await deps.overlay.claimsOf(ws) : [])
        .sort(byPathThenSymbol)
        .filter((cl) => !after || cl.path > after[0] || (cl.path === after[0] && cl.symbol > after[1]));
      const { items, nextPageToken } = pageOf(CLAIMS_PAGE, page, claims.slice(0, page.size + 1), (cl) => [cl.path, cl.symbol]);
      return { claims: items.map(claimToWire), nextPageToken };
    },
  };
}
