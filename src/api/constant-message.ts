/**
 * Responses answered many times unchanged (Health/Check's status): created once and encoded
 * once, so a call that answers one allocates and encodes nothing. A transport that sends bytes
 * (the gRPC bridge) asks encodedOf() first; one that does not still skips create(). A message
 * made here must never be changed: its bytes are kept beside it.
 */
import { create, toBinary, type DescMessage, type Message, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";

const encodings = new WeakMap<Message, Buffer>();

export function constantMessage<T extends DescMessage>(schema: T, init: MessageInitShape<T>): MessageShape<T> {
  const message = create(schema, init);
  keepEncoding(message, toBinary(schema, message));
  return Object.freeze(message) as MessageShape<T>;
}

/**
 * Keeps `bytes` as the encoding of `message` (made by the caller, who must never change the
 * message afterwards): what a response assembled from kept parts hands the gRPC bridge.
 */
export function keepEncoding(message: Message, u8: Uint8Array): void {
  encodings.set(message, Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength));
}

/** The kept encoding of a message (constant or kept by keepEncoding); undefined for any other. */
export function encodedOf(message: Message): Buffer | undefined {
  return encodings.get(message);
}
