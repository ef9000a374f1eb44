/** A small unary client for the harness's own setup calls (creating workspaces, polling health). */
import http2 from "node:http2";
import { create, fromBinary, toBinary, type DescMessage, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import { grpcFrame, grpcUnframe } from "./frame.js";

export class GrpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(`grpc-status ${code}: ${message}`);
  }
}

export class RpcClient {
  private session: http2.ClientHttp2Session | undefined;
  constructor(readonly url: string) {}

  private open(): http2.ClientHttp2Session {
    if (!this.session || this.session.closed || this.session.destroyed) {
      this.session = http2.connect(this.url);
      this.session.on("error", () => {});
    }
    return this.session;
  }

  /** One gRPC unary call; rejects with GrpcError on a non-zero grpc-status. */
  async unary<I extends DescMessage, O extends DescMessage>(path: string, input: I, output: O, message: MessageInitShape<I>, timeoutMs = 10_000): Promise<MessageShape<O>> {
    const body = grpcFrame(toBinary(input, create(input, message)));
    const session = this.open();
    return new Promise((resolve, reject) => {
      const req = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers" });
      req.setTimeout(timeoutMs, () => req.close(http2.constants.NGHTTP2_CANCEL));
      const chunks: Buffer[] = [];
      let status: string | undefined;
      let grpcMessage = "";
      req.on("response", (h) => {
        if (h["grpc-status"] !== undefined) {
          status = String(h["grpc-status"]);
          grpcMessage = decodeURIComponent(String(h["grpc-message"] ?? ""));
        }
      });
      req.on("trailers", (t) => {
        status = String(t["grpc-status"]);
        grpcMessage = decodeURIComponent(String(t["grpc-message"] ?? ""));
      });
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("error", reject);
      req.on("close", () => {
        if (status === undefined) return reject(new Error(`${path}: no grpc-status (rst ${req.rstCode})`));
        if (status !== "0") return reject(new GrpcError(Number(status), grpcMessage));
        const msg = grpcUnframe(Buffer.concat(chunks));
        resolve(fromBinary(output, msg ?? new Uint8Array()));
      });
      req.end(body);
    });
  }

  close(): void {
    this.session?.close();
    this.session = undefined;
  }
}

/** Runs `fn` over `items` with at most `limit` in flight. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!, i);
      }
    }),
  );
  return out;
}
