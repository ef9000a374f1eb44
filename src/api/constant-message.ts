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
  const u8 = toBinary(schema, message);
  encodings.set(message, Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength));
  return Object.freeze(message) as MessageShape<T>;
}

/** The kept encoding of a constant message; undefined for any other. */
export function encodedOf(message: Message): Buffer | undefined {
  return encodings.get(message);
}
