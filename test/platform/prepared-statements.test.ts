import { afterAll, beforeAll, expect } from "vitest";
import { sql } from "kysely";
import { needs } from "../support/services.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { openDatabase, type OpenedDatabase } from "../../src/platform/database.js";

needs({ postgres: true })("named prepared statements on pg", () => {
  let database: TestDatabase;
  let one: OpenedDatabase;
  beforeAll(async () => {
    database = await createTestDatabase("postgres", { migrate: false });
    // One connection: every statement below runs on the backend whose prepared statements are listed.
    one = await openDatabase({ url: database.url, dataDir: "unused", poolMax: 1 });
  });
  afterAll(async () => {
    await one?.close();
    await database?.drop();
  });

  const preparedNames = async (): Promise<string[]> =>
    (await sql<{ name: string }>`SELECT name FROM pg_prepared_statements ORDER BY name`.execute(one.db)).rows.map((r) => r.name);

  needs({ postgres: true }).it("prepares a parameterised statement once it is hot, and runs it with every call's values", async () => {
    const text = (n: number) => sql<{ v: number }>`SELECT ${n}::int + 1 AS v`.execute(one.db);
    expect((await text(1)).rows[0]!.v).toBe(2);
    expect((await preparedNames()).filter((n) => n.startsWith("berth_"))).toEqual([]);
    const answers: number[] = [];
    for (let i = 2; i < 8; i++) answers.push((await text(i)).rows[0]!.v);
    expect(answers).toEqual([3, 4, 5, 6, 7, 8]);
    expect((await preparedNames()).filter((n) => n.startsWith("berth_"))).toHaveLength(1);
  });

  needs({ postgres: true }).it("answers a prepared statement whose table gained a column under it (another instance's migration) instead of failing", async () => {
    await sql`CREATE TABLE grows (id int PRIMARY KEY, a text)`.execute(one.db);
    await sql`INSERT INTO grows VALUES (1, 'x')`.execute(one.db);
    const read = () => sql<Record<string, unknown>>`SELECT * FROM grows WHERE id = ${1}`.execute(one.db);
    for (let i = 0; i < 5; i++) expect((await read()).rows).toEqual([{ id: 1, a: "x" }]);
    // From another connection, as a second instance's migration would.
    const other = await database.reopen();
    try {
      await sql`ALTER TABLE grows ADD COLUMN b int DEFAULT 7`.execute(other.db);
    } finally {
      await other.close();
    }
    expect((await read()).rows).toEqual([{ id: 1, a: "x", b: 7 }]);
    // And the statement is prepared again on the new shape.
    for (let i = 0; i < 4; i++) expect((await read()).rows).toEqual([{ id: 1, a: "x", b: 7 }]);
  });

  needs({ postgres: true }).it("inside a transaction, the changed statement fails that transaction only: the next one on the connection answers", async () => {
    await sql`CREATE TABLE grows_tx (id int PRIMARY KEY, a text)`.execute(one.db);
    await sql`INSERT INTO grows_tx VALUES (1, 'x')`.execute(one.db);
    const read = (db: typeof one.db) => sql<Record<string, unknown>>`SELECT * FROM grows_tx WHERE id = ${1}`.execute(db);
    for (let i = 0; i < 5; i++) expect((await read(one.db)).rows).toEqual([{ id: 1, a: "x" }]);
    const other = await database.reopen();
    try {
      await sql`ALTER TABLE grows_tx ADD COLUMN b int DEFAULT 7`.execute(other.db);
    } finally {
      await other.close();
    }
    // The error aborts the transaction it ran in (the unit of work runs such a transaction again).
    await expect(one.db.transaction().execute((trx) => read(trx))).rejects.toMatchObject({ code: "0A000" });
    expect((await one.db.transaction().execute((trx) => read(trx))).rows).toEqual([{ id: 1, a: "x", b: 7 }]);
    expect((await read(one.db)).rows).toEqual([{ id: 1, a: "x", b: 7 }]);
  });
});
