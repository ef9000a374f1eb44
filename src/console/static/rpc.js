// Berth over the Connect protocol, straight from fetch: unary calls as POST with JSON, server
// streams as enveloped JSON messages (a 5-byte prefix: flags, then the length, big-endian; the
// message flagged 0x02 ends the stream and carries its error, if any).

const TOKEN_KEY = "berth.token";
const END_STREAM = 0x02;

/** The bearer token, kept for this tab only (sessionStorage), never in a cookie or the URL. */
export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY) ?? "",
  set: (t) => (t ? sessionStorage.setItem(TOKEN_KEY, t) : sessionStorage.removeItem(TOKEN_KEY)),
};

export class RpcError extends Error {
  constructor(code, message, reason, metadata) {
    super(message);
    this.code = code;
    this.reason = reason;
    this.metadata = metadata ?? {};
  }
}

// Every console call says it only watches: with auth off all callers are one anonymous principal,
// and a person looking at a session must not keep a dead agent's session connected (docs/lifecycle.md).
function headers(contentType) {
  const h = { "content-type": contentType, "connect-protocol-version": "1", "berth-observer": "1" };
  const t = token.get();
  if (t) h.authorization = `Bearer ${t}`;
  return h;
}

/** A Connect error body ({code, message, details}) → RpcError, with the ErrorInfo's reason when sent. */
function toError(body, httpStatus) {
  const info = (body?.details ?? []).find((d) => d.type === "google.rpc.ErrorInfo")?.debug;
  return new RpcError(body?.code ?? `http_${httpStatus}`, body?.message ?? `HTTP ${httpStatus}`, info?.reason, info?.metadata);
}

/** A unary call: `service` e.g. "WorkspaceService", `method` e.g. "ListSessions", `request` in proto3 JSON. */
export async function call(service, method, request = {}, signal) {
  const res = await fetch(`/berth.v1.${service}/${method}`, { method: "POST", headers: headers("application/json"), body: JSON.stringify(request), signal });
  const text = await res.text();
  let body;
  try {
    body = text ? JSON.parse(text) : {};
  } catch {
    throw new RpcError("unknown", `HTTP ${res.status}: ${text.slice(0, 200)}`);
  }
  if (!res.ok) throw toError(body, res.status);
  return body;
}

function envelope(request) {
  const json = new TextEncoder().encode(JSON.stringify(request));
  const out = new Uint8Array(5 + json.length);
  new DataView(out.buffer).setUint32(1, json.length);
  out.set(json, 5);
  return out;
}

/**
 * A server stream: calls onMessage for each message, resolves when the stream ends cleanly,
 * rejects with its RpcError (or a network error) otherwise. Abort `signal` to stop it; `onOpen`
 * runs once the server has answered.
 */
export async function stream(service, method, request, onMessage, signal, onOpen = () => {}) {
  const res = await fetch(`/berth.v1.${service}/${method}`, { method: "POST", headers: headers("application/connect+json"), body: envelope(request), signal });
  if (!res.ok || !res.body) {
    let body = {};
    try {
      body = await res.json();
    } catch {
      // Not a Connect error body: the status says it all.
    }
    throw toError(body, res.status);
  }
  onOpen();
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buf = new Uint8Array(0);
  for (;;) {
    const { done, value } = await reader.read();
    if (done) throw new RpcError("unavailable", "the stream ended without its end-of-stream message");
    const joined = new Uint8Array(buf.length + value.length);
    joined.set(buf);
    joined.set(value, buf.length);
    buf = joined;
    while (buf.length >= 5) {
      const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
      const flags = view.getUint8(0);
      const len = view.getUint32(1);
      if (buf.length < 5 + len) break;
      const msg = JSON.parse(decoder.decode(buf.subarray(5, 5 + len)) || "{}");
      buf = buf.slice(5 + len);
      if (flags & END_STREAM) {
        if (msg.error) throw toError(msg.error, 200);
        return;
      }
      onMessage(msg);
    }
  }
}
