/**
 * Forwarding a turn RPC to the instance that holds the session's environment (docs/turns.md,
 * "Several instances"): the TurnForwarder the api's turn handlers are given.
 *
 * One grpc-js client per owner address, made on first use and kept (closed at shutdown). A
 * forwarded call is the caller's call on another instance: the same method and request bytes
 * (as received over gRPC; re-encoded for Connect callers), the caller's metadata (authorization,
 * traceparent, tracestate) plus `x-berth-forwarded: <this instance>`, the caller's deadline, and
 * cancellation when the caller goes away. The owner's answer comes back unchanged: its response,
 * or its status code, message and google.rpc.Status details (grpc-status-details-bin, passed on
 * as bytes). An owner that cannot be reached (no connection: UNAVAILABLE without details) is
 * UNAVAILABLE TURN_OWNER_UNREACHABLE, which the caller may retry.
 */
import { readFileSync } from "node:fs";
import * as grpc from "@grpc/grpc-js";
import { fromBinary, toBinary, type DescMessage, type DescMethodUnary, type MessageShape } from "@bufbuild/protobuf";
import type { Logger } from "pino";
import type { Config } from "../config.js";
import { BerthError } from "../platform/errors.js";
import type { CallContext } from "../api/handler.js";
import { FORWARDED_HEADER, type ForwardTarget, type TurnForwarder } from "../api/turn-routing.js";
import { STATUS_DETAILS_KEY } from "./grpc-bridge.js";
import { RpcStatus } from "./status.js";

/**
 * Caller metadata a forwarded call carries on (the owner authenticates and traces it as the
 * caller's, and an observer's call stays one: api/session-access.ts OBSERVER_HEADER).
 */
const PASSED_THROUGH = ["authorization", "traceparent", "tracestate", "berth-observer"] as const;

export interface ForwarderOptions {
  /** This instance: the value of x-berth-forwarded. */
  readonly instanceId: string;
  readonly credentials: grpc.ChannelCredentials;
  readonly logger: Logger;
}

/**
 * Channel credentials for calls to the other instances: plaintext when this instance serves
 * plaintext; with TLS, verifying the owner against BERTH_TLS_CLIENT_CA (when set) and this
 * instance's own certificate chain (a shared or self-signed certificate), presenting this
 * instance's certificate as the client certificate when client certificates are required.
 */
export function forwarderCredentials(tls: Config["tls"]): grpc.ChannelCredentials {
  if (tls === undefined) return grpc.credentials.createInsecure();
  const cert = readFileSync(tls.cert);
  const roots = tls.clientCa !== undefined ? Buffer.concat([readFileSync(tls.clientCa), Buffer.from("\n"), cert]) : cert;
  return tls.clientCa !== undefined ? grpc.credentials.createSsl(roots, readFileSync(tls.key), cert) : grpc.credentials.createSsl(roots);
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export class GrpcForwarder implements TurnForwarder {
  private readonly clients = new Map<string, grpc.Client>();
  private closed = false;

  constructor(private readonly opts: ForwarderOptions) {}

  forward<I extends DescMessage, O extends DescMessage>(method: DescMethodUnary<I, O>, target: ForwardTarget, ctx: CallContext, request: MessageShape<I>): Promise<MessageShape<O>> {
    const client = this.client(target.address);
    const bytes = ctx.method === method && ctx.requestBytes !== undefined ? ctx.requestBytes : toBinary(method.input, request);
    const metadata = new grpc.Metadata();
    for (const name of PASSED_THROUGH) {
      const v = ctx.requestHeader(name);
      if (v !== undefined) metadata.set(name, v);
    }
    metadata.set(FORWARDED_HEADER, this.opts.instanceId);
    const options: grpc.CallOptions = ctx.deadline !== undefined ? { deadline: new Date(ctx.deadline) } : {};
    const signal = ctx.signal;
    return new Promise<MessageShape<O>>((resolve, reject) => {
      const onAbort = (): void => call.cancel();
      const call = client.makeUnaryRequest<Uint8Array, MessageShape<O>>(
        `/${method.parent.typeName}/${method.name}`,
        asBuffer,
        (buf: Buffer) => fromBinary(method.output, buf),
        bytes,
        metadata,
        options,
        (err, res) => {
          signal.removeEventListener("abort", onAbort);
          if (err) reject(this.failure(err, target));
          else resolve(res!);
        },
      );
      if (signal.aborted) call.cancel();
      else signal.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** The owner's status as it sent it; a connection failure (no status of the owner's) as TURN_OWNER_UNREACHABLE. */
  private failure(err: grpc.ServiceError, target: ForwardTarget): RpcStatus | BerthError {
    const bin = err.metadata?.get(STATUS_DETAILS_KEY)[0];
    const statusBin = bin instanceof Buffer ? new Uint8Array(bin.buffer, bin.byteOffset, bin.byteLength) : undefined;
    if (err.code === grpc.status.UNAVAILABLE && statusBin === undefined) {
      this.opts.logger.warn({ owner: target.instanceId, address: target.address, details: err.details }, "turns: could not reach the instance holding the session's environment");
      return new BerthError("unavailable", "TURN_OWNER_UNREACHABLE", `the instance holding the session's environment (${target.instanceId} at ${target.address}) cannot be reached: ${err.details}; retry`, {
        owner_instance: target.instanceId,
        address: target.address,
      });
    }
    return new RpcStatus(err.code, err.details, [], statusBin);
  }

  private client(address: string): grpc.Client {
    if (this.closed) throw new BerthError("unavailable", "SERVER_SHUTTING_DOWN", "server shutting down");
    let c = this.clients.get(address);
    if (c === undefined) {
      c = new grpc.Client(address, this.opts.credentials, { "grpc.enable_channelz": 0 });
      this.clients.set(address, c);
    }
    return c;
  }

  /** Closes every client (at shutdown, after the transports stopped). */
  close(): void {
    this.closed = true;
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
  }
}
