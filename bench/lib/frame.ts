/** gRPC length-prefixed framing: 1 byte compressed flag (0), 4 bytes big-endian length, message. */
export function grpcFrame(message: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(5 + message.length);
  out[0] = 0;
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}

/** The first message of a gRPC response body (uncompressed), or undefined when there is none. */
export function grpcUnframe(body: Buffer): Uint8Array | undefined {
  if (body.length < 5) return undefined;
  if (body[0] !== 0) throw new Error("compressed gRPC message: not supported by the bench client");
  const len = body.readUInt32BE(1);
  return body.subarray(5, 5 + len);
}
