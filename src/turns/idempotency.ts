/**
 * The turns this process knows, by id and by `client_turn_id`, and the retry rule: a BeginTurn
 * repeated with one client_turn_id (concurrently, or later) is the same turn — found in memory,
 * joined while its database lookup is in flight, or read from the database.
 *
 * Finished turns are kept a while (a heartbeat or a retry right after EndTurn stays cheap and
 * answers from memory), bounded so a long-lived server does not keep every turn it ever ran.
 */
import { turnFromRow, type TurnRecords } from "./turn-records.js";
import type { BeginResult, Turn } from "./turn.js";

const FINISHED_TURNS_KEPT = 10_000;

export class KnownTurns {
  private readonly turns = new Map<string, Turn>();
  private readonly byClientId = new Map<string, Turn>();
  private readonly clientLookups = new Map<string, Promise<BeginResult>>();
  private readonly finished: string[] = [];

  constructor(private readonly records: TurnRecords) {}

  get(turnId: string): Turn | undefined {
    return this.turns.get(turnId);
  }

  has(turnId: string): boolean {
    return this.turns.has(turnId);
  }

  values(): IterableIterator<Turn> {
    return this.turns.values();
  }

  /** A turn BeginTurn accepted: known by id, and by its client_turn_id when it has one. */
  add(turn: Turn): void {
    this.turns.set(turn.id, turn);
    if (turn.clientTurnId) this.byClientId.set(clientKey(turn.sessionId, turn.clientTurnId), turn);
  }

  /**
   * Retries of one client_turn_id are the same turn: in memory, in flight, or in the database.
   * `answer` answers with a turn found in the database; `begin` starts the turn when none exists.
   */
  once(sessionId: string, clientTurnId: string, answer: (turn: Turn) => Promise<BeginResult>, begin: () => Promise<BeginResult>): Promise<BeginResult> {
    const key = clientKey(sessionId, clientTurnId);
    const known = this.byClientId.get(key);
    if (known?.started) return known.started;
    const inFlight = this.clientLookups.get(key);
    if (inFlight) return inFlight;
    const p = (async () => {
      const row = await this.records.findByClientId(sessionId, clientTurnId);
      const again = this.byClientId.get(key);
      if (again?.started) return again.started;
      if (row) return answer(this.turns.get(row.id) ?? turnFromRow(row));
      return begin();
    })();
    this.clientLookups.set(key, p);
    void p.finally(() => this.clientLookups.delete(key)).catch(() => {}); // p itself goes to the caller, failure included
    return p;
  }

  /** A BeginTurn that failed before its row was written: a retry of its client_turn_id starts afresh. */
  forgetUnwritten(turn: Turn): void {
    if (!turn.clientTurnId) return;
    const key = clientKey(turn.sessionId, turn.clientTurnId);
    if (this.byClientId.get(key) === turn && !turn.rowWritten) this.byClientId.delete(key);
  }

  /** A turn that never was (its row lost to another instance's): forgotten at once, so a retry starts afresh. */
  forget(turn: Turn): void {
    if (this.turns.get(turn.id) === turn) this.turns.delete(turn.id);
    if (!turn.clientTurnId) return;
    const key = clientKey(turn.sessionId, turn.clientTurnId);
    if (this.byClientId.get(key) === turn) this.byClientId.delete(key);
  }

  /** Keeps finished turns in memory for a while (heartbeats, retries), bounded. */
  forgetLater(turn: Turn): void {
    this.finished.push(turn.id);
    while (this.finished.length > FINISHED_TURNS_KEPT) {
      const id = this.finished.shift()!;
      const t = this.turns.get(id);
      if (t && t.state !== "running") {
        this.turns.delete(id);
        if (t.clientTurnId) this.byClientId.delete(clientKey(t.sessionId, t.clientTurnId));
      }
    }
  }
}

function clientKey(sessionId: string, clientTurnId: string): string {
  return `${sessionId}\u0000${clientTurnId}`;
}
