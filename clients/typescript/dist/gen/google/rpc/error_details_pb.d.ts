import type { GenFile, GenMessage } from "@bufbuild/protobuf/codegenv2";
import type { Duration } from "@bufbuild/protobuf/wkt";
import type { Message } from "@bufbuild/protobuf";
/**
 * Describes the file google/rpc/error_details.proto.
 */
export declare const file_google_rpc_error_details: GenFile;
/**
 * The reason of an error, machine-readable: `reason` is stable (e.g. SESSION_STRANDED),
 * `domain` is "berth", and `metadata` holds the facts a client needs to act.
 *
 * @generated from message google.rpc.ErrorInfo
 */
export type ErrorInfo = Message<"google.rpc.ErrorInfo"> & {
    /**
     * UPPER_SNAKE_CASE reason, stable across releases.
     *
     * @generated from field: string reason = 1;
     */
    reason: string;
    /**
     * The logical owner of the reason ("berth").
     *
     * @generated from field: string domain = 2;
     */
    domain: string;
    /**
     * Additional structured facts, e.g. {"session_id": "..."}.
     *
     * @generated from field: map<string, string> metadata = 3;
     */
    metadata: {
        [key: string]: string;
    };
};
/**
 * Describes the message google.rpc.ErrorInfo.
 * Use `create(ErrorInfoSchema)` to create a new message.
 */
export declare const ErrorInfoSchema: GenMessage<ErrorInfo>;
/**
 * When the client may retry.
 *
 * @generated from message google.rpc.RetryInfo
 */
export type RetryInfo = Message<"google.rpc.RetryInfo"> & {
    /**
     * The delay after which a retry may succeed.
     *
     * @generated from field: google.protobuf.Duration retry_delay = 1;
     */
    retryDelay?: Duration | undefined;
};
/**
 * Describes the message google.rpc.RetryInfo.
 * Use `create(RetryInfoSchema)` to create a new message.
 */
export declare const RetryInfoSchema: GenMessage<RetryInfo>;
/**
 * Which quota a request ran into (RESOURCE_EXHAUSTED): the subject it is counted on and how.
 *
 * @generated from message google.rpc.QuotaFailure
 */
export type QuotaFailure = Message<"google.rpc.QuotaFailure"> & {
    /**
     * Every quota exceeded.
     *
     * @generated from field: repeated google.rpc.QuotaFailure.Violation violations = 1;
     */
    violations: QuotaFailure_Violation[];
};
/**
 * Describes the message google.rpc.QuotaFailure.
 * Use `create(QuotaFailureSchema)` to create a new message.
 */
export declare const QuotaFailureSchema: GenMessage<QuotaFailure>;
/**
 * One quota that was exceeded.
 *
 * @generated from message google.rpc.QuotaFailure.Violation
 */
export type QuotaFailure_Violation = Message<"google.rpc.QuotaFailure.Violation"> & {
    /**
     * What the quota is counted on, e.g. "agent:claude-7" or "workspace:<id>".
     *
     * @generated from field: string subject = 1;
     */
    subject: string;
    /**
     * The limit and the current use, in words.
     *
     * @generated from field: string description = 2;
     */
    description: string;
};
/**
 * Describes the message google.rpc.QuotaFailure.Violation.
 * Use `create(QuotaFailure_ViolationSchema)` to create a new message.
 */
export declare const QuotaFailure_ViolationSchema: GenMessage<QuotaFailure_Violation>;
/**
 * Which fields of a request were invalid and why.
 *
 * @generated from message google.rpc.BadRequest
 */
export type BadRequest = Message<"google.rpc.BadRequest"> & {
    /**
     * All violations found.
     *
     * @generated from field: repeated google.rpc.BadRequest.FieldViolation field_violations = 1;
     */
    fieldViolations: BadRequest_FieldViolation[];
};
/**
 * Describes the message google.rpc.BadRequest.
 * Use `create(BadRequestSchema)` to create a new message.
 */
export declare const BadRequestSchema: GenMessage<BadRequest>;
/**
 * A violation of a single field.
 *
 * @generated from message google.rpc.BadRequest.FieldViolation
 */
export type BadRequest_FieldViolation = Message<"google.rpc.BadRequest.FieldViolation"> & {
    /**
     * Path to the field, e.g. "repo_id" or "files[2].path".
     *
     * @generated from field: string field = 1;
     */
    field: string;
    /**
     * Why the value is invalid.
     *
     * @generated from field: string description = 2;
     */
    description: string;
    /**
     * UPPER_SNAKE_CASE reason, e.g. REQUIRED or INVALID_UUID.
     *
     * @generated from field: string reason = 3;
     */
    reason: string;
};
/**
 * Describes the message google.rpc.BadRequest.FieldViolation.
 * Use `create(BadRequest_FieldViolationSchema)` to create a new message.
 */
export declare const BadRequest_FieldViolationSchema: GenMessage<BadRequest_FieldViolation>;
