/**
 * BeginTurn latency on a 1,000-file git repository (real server, real PostgreSQL), cold and warm.
 * Opt-in: BERTH_TURN_BENCH=1 npx vitest run test/turns/begin-turn-latency.test.ts
 */
import { rmSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { describe, expect, it } from "vitest";
import { TurnOutcome } from "../../gen/berth/v1/types_pb.js";
import { makeGitRepo, newSession, startTurnBerth } from "../../test/turns/helpers.js";

const RUN = process.env.BERTH_TURN_BENCH === "1";

function p50(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

describe.runIf(RUN)("BeginTurn latency", () => {
  it("is under 300 ms cold and 3 ms warm (p50) on a 1,000-file repository", { timeout: 300_000 }, async () => {
    const source = makeGitRepo(1000);
    const b = await startTurnBerth({ env: { BERTH_LOG_LEVEL: "warn" } });
    try {
      const { sessionId } = await newSession(b, source);
      const cold: number[] = [];
      const coldServer: number[] = [];
      const warm: number[] = [];
      const warmServer: number[] = [];
      const ws = await b.server.registry.requireActive(sessionId);
      const never = new AbortController().signal;
      for (let i = 0; i < 25; i++) {
        // cold: FAILED tears the environment down, so the next BeginTurn materialises
        let t0 = performance.now();
        let t = await b.turns.beginTurn({ sessionId });
        cold.push(performance.now() - t0);
        expect(t.warm).toBe(false);
        await b.turns.endTurn({ turnId: t.turnId, outcome: TurnOutcome.FAILED });
        t0 = performance.now();
        const r = await b.server.turns.beginTurn(ws, undefined, "supersede", never);
        coldServer.push(performance.now() - t0);
        expect(r.turn.warm).toBe(false);
        await b.turns.endTurn({ turnId: r.turn.id, outcome: TurnOutcome.COMPLETED });
        // warm
        for (let j = 0; j < 4; j++) {
          t0 = performance.now();
          t = await b.turns.beginTurn({ sessionId });
          warm.push(performance.now() - t0);
          expect(t.warm).toBe(true);
          await b.turns.endTurn({ turnId: t.turnId, outcome: TurnOutcome.COMPLETED });
          t0 = performance.now();
          const w = await b.server.turns.beginTurn(ws, undefined, "supersede", never);
          warmServer.push(performance.now() - t0);
          expect(w.turn.warm).toBe(true);
          await b.turns.endTurn({ turnId: w.turn.id, outcome: i === 24 && j === 3 ? TurnOutcome.COMPLETED : TurnOutcome.COMPLETED });
        }
        await b.turns.endTurn({ turnId: (await b.turns.beginTurn({ sessionId })).turnId, outcome: TurnOutcome.FAILED });
      }
      const line = {
        cold_rpc_p50_ms: p50(cold).toFixed(2),
        cold_server_p50_ms: p50(coldServer).toFixed(2),
        warm_rpc_p50_ms: p50(warm).toFixed(2),
        warm_server_p50_ms: p50(warmServer).toFixed(2),
        samples: { cold: cold.length, warm: warm.length },
      };
      console.log("BeginTurn latency", JSON.stringify(line));
      expect(p50(coldServer)).toBeLessThan(300);
      expect(p50(warmServer)).toBeLessThan(3);
    } finally {
      await b.close();
      rmSync(source, { recursive: true, force: true });
    }
  });
});
