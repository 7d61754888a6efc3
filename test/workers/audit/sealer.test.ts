import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { entryHash, GENESIS_HASH, parsePayload, type ChainEntry } from "../../../src/audit/chain";
import { loadHead, sealPage } from "../../../src/audit/seal";
import { getDb } from "../../../src/db/client";
import { errorText } from "../../../src/db/guard";
import { getAuditSealer } from "../../../src/durable-objects/audit-sealer-rpc";
import { appendEvent } from "../../../src/lib/events";
import { appendRoleTurn } from "../../../src/team/ledger";
import { TICKS } from "../../../src/workers/cron/ticks";
import { call } from "../../factories";

const db = () => getDb(env.DB);
const sealer = () => getAuditSealer(env);

async function writeEvents(n: number, type = "test.audit", payload: Record<string, unknown> = {}) {
  const d = db();
  const inserts = Array.from({ length: n }, (_, i) => appendEvent(d, { type, subject: `s-${i}`, payload: { i, ...payload } }, new Date()));
  await d.batch(inserts as [(typeof inserts)[0], ...typeof inserts]);
}

/** Seals until nothing is left (background runs may be sealing at the same time). */
async function sealAll() {
  for (let i = 0; i < 100; i++) {
    const report = await sealer().seal();
    const { n } = (await db().all<{ n: number }>(sql`SELECT COUNT(*) AS n FROM events WHERE id > ${(await loadHead(db())).eventId}`))[0]!;
    if (n === 0 && !report.backlog) return report;
  }
  throw new Error("the sealer never caught up");
}

interface Joined {
  seq: number;
  event_id: number;
  prev_hash: string;
  hash: string;
  ref: string | null;
  id: number;
  type: string;
  subject: string | null;
  payload: string;
  created_at: string;
}

/** The whole chain, recomputed: one line, dense, every event once, in id order, every hash right. */
async function expectOneLinearChain() {
  const rows = await db().all<Joined>(
    sql`SELECT c.seq, c.event_id, c.prev_hash, c.hash, c.ref, e.id, e.type, e.subject, e.payload, e.created_at
        FROM audit_chain c JOIN events e ON e.id = c.event_id ORDER BY c.seq`,
  );
  const events = (await db().all<{ n: number }>(sql`SELECT COUNT(*) AS n FROM events`))[0]!.n;
  expect(rows.length).toBe(events);
  let prev = GENESIS_HASH;
  let prevId = 0;
  for (const [i, r] of rows.entries()) {
    expect(r.seq).toBe(i + 1);
    expect(r.prev_hash).toBe(prev);
    expect(r.event_id).toBeGreaterThan(prevId);
    const entry: ChainEntry = {
      seq: r.seq,
      prev_hash: r.prev_hash,
      id: r.id,
      type: r.type,
      subject: r.subject,
      payload: parsePayload(r.payload),
      created_at: r.created_at,
      ...(r.ref ? { ref: JSON.parse(r.ref) } : {}),
    };
    expect(await entryHash(entry)).toBe(r.hash);
    prev = r.hash;
    prevId = r.event_id;
  }
  const { forks } = (await db().all<{ forks: number }>(sql`SELECT COUNT(*) - COUNT(DISTINCT prev_hash) AS forks FROM audit_chain`))[0]!;
  expect(forks).toBe(0);
  return rows;
}

describe("AuditSealer", () => {
  it("seals events in commit order into one chain and signs its head", async () => {
    await writeEvents(7);
    const report = await sealAll();
    expect(report.signing).toBe("ok");
    const rows = await expectOneLinearChain();
    const cp = await db().all<{ seq: number; hash: string; kid: string }>(
      sql`SELECT seq, hash, kid FROM audit_checkpoints ORDER BY seq DESC LIMIT 1`,
    );
    expect(cp[0]).toMatchObject({ seq: rows.length, hash: rows.at(-1)!.hash });
    const keys = await call("/.well-known/crewplane-audit-keys", { token: null });
    expect(keys.status).toBe(200);
    expect(keys.body.keys).toEqual([
      expect.objectContaining({ kid: cp[0]!.kid, alg: "Ed25519", from_seq: expect.any(Number), to_seq: null, not_after: null }),
    ]);
    expect(keys.body.keys[0].public_key_jwk).toEqual({ kty: "OKP", crv: "Ed25519", x: "aqc1o5cqNyln50UDBmIOCU7HcHDHLVvOjNDCyyl7NE8" });
  });

  it("keeps one linear chain when 50 writers and the sealer run at once", async () => {
    const writers = Array.from({ length: 50 }, (_, w) => writeEvents(3, "test.concurrent", { w }));
    const sealers = Array.from({ length: 10 }, () => sealer().seal());
    const pokes = Array.from({ length: 10 }, () => sealer().poke({ windowMs: 500 }));
    await Promise.all([...writers, ...sealers, ...pokes]);
    await sealAll();
    const rows = await expectOneLinearChain();
    expect(rows.filter((r) => r.type === "test.concurrent")).toHaveLength(150);
  });

  it("seals an event written through the API within two seconds, with no call to the sealer", async () => {
    const created = await call("/v1/admin/operators", { body: { name: "audit-watch", role: "viewer" } });
    expect(created.status).toBe(201);
    const since = Date.now();
    const { id } = (await db().all<{ id: number }>(sql`SELECT MAX(id) AS id FROM events WHERE type = 'operator.created'`))[0]!;
    for (;;) {
      const [row] = await db().all<{ seq: number }>(sql`SELECT seq FROM audit_chain WHERE event_id = ${id}`);
      if (row) break;
      if (Date.now() - since > 2_000) throw new Error("not sealed within 2 s");
      await new Promise((r) => setTimeout(r, 50));
    }
  });

  it("refers an event that closes a role-ledger stage to that stage's row in the task's chain", async () => {
    const stageId = `st_${crypto.randomUUID()}`;
    const turn = await appendRoleTurn(
      db(),
      {
        task_id: "task_audit_ref",
        round: 1,
        role: "planner",
        stage: "plan",
        stage_id: stageId,
        requested_runtime: "offline",
        request_model: "offline",
        packets: [],
        evidence_grade: "none",
        outcome: "completed",
        config_fingerprint_hard: "f",
      },
      new Date(),
    );
    await db().batch([
      appendEvent(db(), { type: "team_stage_completed", subject: "task_audit_ref", payload: { stage_id: stageId } }, new Date()),
    ]);
    await sealAll();
    const rows = await expectOneLinearChain();
    const sealed = rows.find(
      (r) => r.type === "team_stage_completed" && (JSON.parse(r.payload) as { stage_id: string }).stage_id === stageId,
    )!;
    expect(JSON.parse(sealed.ref!)).toEqual({ role_turn: { task_id: "task_audit_ref", seq: turn.seq, hash: turn.hash } });
  });

  it("is refused by the database when an insert is not the next link, and chain rows never change", async () => {
    await writeEvents(2);
    await sealAll();
    const head = await loadHead(db());
    const [first] = await db().all<{ prev_hash: string }>(sql`SELECT prev_hash FROM audit_chain WHERE seq = 1`);
    const at = new Date().toISOString();
    // Each is refused by the rule it breaks (the trigger's own message), not by some other constraint:
    // a fork in particular is stopped by the next-link trigger alone (prev_hash is not UNIQUE, migration 0027).
    const attempts: [ReturnType<typeof sql>, RegExp][] = [
      // a fork: the next seq, chained to an old entry
      [
        sql`INSERT INTO audit_chain (seq, event_id, prev_hash, hash, sealed_at) VALUES (${head.seq + 1}, ${head.eventId + 1000}, ${first!.prev_hash}, 'x', ${at})`,
        /not the next link/,
      ],
      // a gap
      [
        sql`INSERT INTO audit_chain (seq, event_id, prev_hash, hash, sealed_at) VALUES (${head.seq + 2}, ${head.eventId + 1000}, ${head.hash}, 'x', ${at})`,
        /not the next link/,
      ],
      // an event committed before the head's
      [
        sql`INSERT INTO audit_chain (seq, event_id, prev_hash, hash, sealed_at) VALUES (${head.seq + 1}, ${head.eventId - 1}, ${head.hash}, 'x', ${at})`,
        /not the next link/,
      ],
      [sql`UPDATE audit_chain SET hash = 'x' WHERE seq = 1`, /append-only/],
      [sql`DELETE FROM audit_chain WHERE seq = ${head.seq}`, /append-only/],
      // a checkpoint of a head the chain does not hold
      [sql`INSERT INTO audit_checkpoints (seq, hash, at, kid, sig) VALUES (${head.seq}, 'x', ${at}, 'k', 's')`, /not a later head/],
      [sql`DELETE FROM audit_checkpoints`, /append-only/],
    ];
    const refusal = (attempt: ReturnType<typeof sql>) =>
      db()
        .run(attempt)
        .then(() => "accepted", errorText);
    for (const [attempt, reason] of attempts) expect(await refusal(attempt)).toMatch(reason);
    expect(await loadHead(db())).toEqual(head);
  });

  it("writes nothing from a stale head: a second sealer's page is refused whole", async () => {
    await writeEvents(3);
    await sealAll();
    await writeEvents(2);
    const head = await loadHead(db());
    const stale = { seq: head.seq - 1, hash: "f".repeat(64), eventId: head.eventId - 1 };
    await expect(sealPage(db(), stale, new Date().toISOString(), 10)).rejects.toThrow();
    await sealAll();
    await expectOneLinearChain();
  });

  it("runs as the every-minute audit tick (and by hand), and does nothing with AUDIT_SEALING=off", async () => {
    await writeEvents(2);
    const res = await call("/v1/admin/ticks/audit", { method: "POST" });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ran: "audit", summary: { head: { seq: expect.any(Number) }, signing: "ok", backlog: false } });
    expect(await TICKS.get("audit")!.run({ ...env, AUDIT_SEALING: "off" }, new Date())).toEqual({
      ran: false,
      reason: "audit_sealing_off",
    });
  });

  it("signs a checkpoint at most every 10 s while the head moves, and again once 10 s have passed", async () => {
    await writeEvents(1);
    await sealAll();
    const last = async () => (await db().all<{ seq: number }>(sql`SELECT MAX(seq) AS seq FROM audit_checkpoints`))[0]!.seq;
    const before = await last();
    await writeEvents(1);
    const report = await sealAll();
    // The previous checkpoint is younger than 10 s: the new head waits, unsigned.
    expect(report.checkpoint).toBeNull();
    expect(await last()).toBe(before);
    expect((await sealer().status()).unsigned).toBeGreaterThan(0);
    expect((await call("/v1/admin/clock", { body: { advance_ms: 11_000 } })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1_100)); // the object's clock cache
    await sealAll();
    const status = await sealer().status();
    expect(status).toMatchObject({ sealing: "on", unsealed: 0, unsigned: 0, signing: "ok" });
    expect(await last()).toBe(status.head.seq);
  });
});
