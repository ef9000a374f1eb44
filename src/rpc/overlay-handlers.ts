/** WriteFile, DeleteFile, ReadFile, ListFiles, ClaimSymbols, ReleaseSymbols, DescribeOtherModifiers (issue 5). */
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { BerthError } from "../domain/errors.js";
import type { ServiceHandlers } from "./handler.js";
import type { WorkspaceServiceDeps } from "./workspace-service.js";

type Methods = ServiceHandlers<typeof WorkspaceService>;
type OverlayMethods = Pick<Methods, "writeFile" | "deleteFile" | "readFile" | "listFiles" | "claimSymbols" | "releaseSymbols" | "describeOtherModifiers">;

const unimplemented = (): never => {
  throw new BerthError("unimplemented", "UNIMPLEMENTED", "the overlay is not implemented yet");
};

export function overlayHandlers(_deps: WorkspaceServiceDeps): OverlayMethods {
  return {
    writeFile: unimplemented,
    deleteFile: unimplemented,
    readFile: unimplemented,
    listFiles: unimplemented,
    claimSymbols: unimplemented,
    releaseSymbols: unimplemented,
    describeOtherModifiers: unimplemented,
  };
}
