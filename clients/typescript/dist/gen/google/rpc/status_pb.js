// Vendored wire-compatible definition of google.rpc.Status (Apache-2.0, googleapis).
// Berth sends it, binary-encoded, in the `grpc-status-details-bin` trailer.
import { fileDesc, messageDesc } from "@bufbuild/protobuf/codegenv2";
import { file_google_protobuf_any } from "@bufbuild/protobuf/wkt";
/**
 * Describes the file google/rpc/status.proto.
 */
export const file_google_rpc_status = /*@__PURE__*/ fileDesc("Chdnb29nbGUvcnBjL3N0YXR1cy5wcm90bxIKZ29vZ2xlLnJwYyJOCgZTdGF0dXMSDAoEY29kZRgBIAEoBRIPCgdtZXNzYWdlGAIgASgJEiUKB2RldGFpbHMYAyADKAsyFC5nb29nbGUucHJvdG9idWYuQW55YgZwcm90bzM", [file_google_protobuf_any]);
/**
 * Describes the message google.rpc.Status.
 * Use `create(StatusSchema)` to create a new message.
 */
export const StatusSchema = /*@__PURE__*/ messageDesc(file_google_rpc_status, 0);
