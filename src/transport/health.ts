/**
 * grpc.health.v1.Health (Check and Watch), served over the same handler mechanism as every
 * other service and exempt from authentication.
 */
import { notFound } from "../platform/errors.js";
import { registration, type CallContext, type ServiceRegistration } from "../api/handler.js";
import { constantMessage } from "../api/constant-message.js";
import {
  Health,
  HealthCheckResponseSchema,
  HealthCheckResponse_ServingStatus as ServingStatus,
  type HealthCheckRequest,
  type HealthCheckResponse,
} from "../../gen/grpc/health/v1/health_pb.js";
import type { MessageInitShape } from "@bufbuild/protobuf";

export { Health, ServingStatus };

type Listener = (service: string, status: ServingStatus) => void;

/** Serving status per service name; "" is the server as a whole. */
export class HealthState {
  private readonly statuses = new Map<string, ServingStatus>();
  private readonly listeners = new Set<Listener>();

  constructor(services: readonly string[] = [""], serving = false) {
    for (const s of services) this.statuses.set(s, serving ? ServingStatus.SERVING : ServingStatus.NOT_SERVING);
  }

  setServing(service: string, serving: boolean): void {
    const status = serving ? ServingStatus.SERVING : ServingStatus.NOT_SERVING;
    if (this.statuses.get(service) === status) return;
    this.statuses.set(service, status);
    for (const l of this.listeners) l(service, status);
  }

  /** Marks every known service NOT_SERVING (shutdown). */
  setAllNotServing(): void {
    for (const s of [...this.statuses.keys()]) this.setServing(s, false);
  }

  /** undefined for an unknown service. */
  status(service: string): ServingStatus | undefined {
    return this.statuses.get(service);
  }

  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

type Out = MessageInitShape<typeof HealthCheckResponseSchema>;

async function* watch(state: HealthState, service: string, signal: AbortSignal): AsyncGenerator<Out> {
  const queue: ServingStatus[] = [];
  let wake: (() => void) | undefined;
  const unsubscribe = state.subscribe((s, status) => {
    if (s !== service) return;
    queue.push(status);
    wake?.();
  });
  const onAbort = (): void => wake?.();
  signal.addEventListener("abort", onAbort);
  try {
    let last = state.status(service) ?? ServingStatus.SERVICE_UNKNOWN;
    yield { status: last };
    while (!signal.aborted) {
      const next = queue.shift();
      if (next === undefined) {
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = undefined;
        continue;
      }
      if (next === last) continue;
      last = next;
      yield { status: next };
    }
  } finally {
    unsubscribe();
    signal.removeEventListener("abort", onAbort);
  }
}

/** Check's answers, one per status: every Check answers the same bytes (nothing made per call). */
const CHECK_ANSWERS = new Map<ServingStatus, HealthCheckResponse>(
  [ServingStatus.SERVING, ServingStatus.NOT_SERVING].map((status) => [status, constantMessage(HealthCheckResponseSchema, { status })]),
);

export function healthRegistration(state: HealthState): ServiceRegistration {
  return registration(Health, {
    check(req: HealthCheckRequest): HealthCheckResponse {
      const status = state.status(req.service);
      if (status === undefined) throw notFound("SERVICE_UNKNOWN", `unknown service "${req.service}"`, { service: req.service });
      // Every status the state holds has its answer made once (CHECK_ANSWERS).
      return CHECK_ANSWERS.get(status)!;
    },
    watch(req: HealthCheckRequest, ctx: CallContext): AsyncIterable<Out> {
      return watch(state, req.service, ctx.signal);
    },
  });
}

export type { HealthCheckResponse };
