import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { verifyExport } from "../../../audit-verifier/src/verify.mjs";
import { loadHead } from "../../../src/audit/seal";
import { getDb } from "../../../src/db/client";
import { getAuditSealer } from "../../../src/durable-objects/audit-sealer-rpc";
import { decodeArchive, type StoredEvent } from "../../../src/events/archive";
import { nextArchiveRun, retentionCutoff } from "../../../src/events/retention";
import { appendEvent } from "../../../src/lib/events";
import { call } from "../../factories";
import { send } from "../../factories/http";

const DAY = 86_400_000;
const db = () => getDb(env.DB);

async function sealAll() {
  for (let i = 0; i < 100; i++) {
    await getAuditSealer(env).seal();
    const { n } = (await db().all<{ n: number }>(sql`SELECT COUNT(*) AS n FROM events WHERE id > ${(await loadHead(db())).eventId}`))[0]!;
    if (n === 0) return;
  }
}

const lines = (text: string) =>
  text
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as Record<string, any>);

const stored = (id: number, created_at: string): StoredEvent => ({ id, type: "t", subject: null, payload: "{}", created_at });

describe("nextArchiveRun", () => {
  const cutoff = "2026-09-01T00:00:00.000Z";
  it("takes the oldest run of one day that is past the cutoff and sealed, and nothing when the oldest event is not due", () => {
    const rows = [
      stored(1, "2026-08-30T10:00:00.000Z"),
      stored(2, "2026-08-30T23:59:59.999Z"),
      stored(3, "2026-08-31T00:00:00.000Z"),
      stored(4, "2026-09-02T00:00:00.000Z"),
    ];
    expect(nextArchiveRun(rows, cutoff, 10)?.events.map((e) => e.id)).toEqual([1, 2]);
    expect(nextArchiveRun(rows.slice(2), cutoff, 10)).toMatchObject({ day: "2026-08-31", events: [{ id: 3 }] });
    expect(nextArchiveRun(rows.slice(3), cutoff, 10)).toBeNull();
    // Unsealed events stay where the sealer reads them.
    expect(nextArchiveRun(rows, cutoff, 1)?.events.map((e) => e.id)).toEqual([1]);
    expect(nextArchiveRun(rows, cutoff, 0)).toBeNull();
  });

  it("stops at a younger event even when older ones follow it (the archive is always a prefix of the ids)", () => {
    const rows = [stored(1, "2026-08-30T10:00:00.000Z"), stored(2, "2026-09-05T00:00:00.000Z"), stored(3, "2026-08-30T11:00:00.000Z")];
    expect(nextArchiveRun(rows, cutoff, 10)?.events.map((e) => e.id)).toEqual([1]);
  });

  it("keeps whole UTC days: the cutoff is midnight retention_days before today's", () => {
    expect(retentionCutoff(new Date("2026-12-01T15:30:00Z"), 90)).toBe("2026-09-02T00:00:00.000Z");
  });
});

describe("the events tick archives old events to R2 and the audit export still verifies across the boundary", () => {
  const now = Date.now();
  const old = (daysAgo: number, minute: number) => new Date(now - daysAgo * DAY + minute * 60_000);
  let oldIds: number[] = [];

  beforeAll(async () => {
    const d = db();
    // Two old days (100 and 95 days ago), then recent events; all sealed and signed.
    await d.batch([
      appendEvent(d, { type: "council.proposed", subject: "prop_old", payload: { title: "An old proposal", n: 1 } }, old(100, 0)),
      appendEvent(d, { type: "node.registered", subject: "node_old", payload: { name: "ancient" } }, old(100, 1)),
      appendEvent(d, { type: "approval.requested", subject: "appr_old", payload: { note: "private", amount: 7 } }, old(95, 0)),
    ]);
    await d.batch([
      appendEvent(d, { type: "council.proposed", subject: "prop_new", payload: { title: "A recent proposal" } }, new Date(now)),
      appendEvent(d, { type: "node.registered", subject: "node_new", payload: { name: "fresh" } }, new Date(now)),
    ]);
    await sealAll();
    oldIds = (await env.DB.prepare(`SELECT id FROM events WHERE subject LIKE '%_old' ORDER BY id`).all<{ id: number }>()).results.map(
      (r) => r.id,
    );
    expect(oldIds).toHaveLength(3);
  });

  it("moves every event past the window to one gzip NDJSON object per day, in id order, and leaves the rest in D1", async () => {
    const before = await send("/v1/audit/export");
    const tick = await call("/v1/admin/ticks/events", { method: "POST" });
    expect(tick.status).toBe(200);
    expect(JSON.stringify(tick.body)).toContain('"archived":3');
    const left = await env.DB.prepare(`SELECT id FROM events WHERE id IN (${oldIds.join(",")})`).all();
    expect(left.results).toEqual([]);
    expect((await env.DB.prepare(`SELECT COUNT(*) AS n FROM events WHERE subject LIKE '%_new'`).first<{ n: number }>())!.n).toBe(2);

    const archives = (
      await env.DB.prepare(`SELECT key, day, first_id, last_id, events, sha256 FROM event_archives ORDER BY first_id`).all<any>()
    ).results;
    expect(archives.map((a) => [a.day, a.events])).toEqual([
      [old(100, 0).toISOString().slice(0, 10), 2],
      [old(95, 0).toISOString().slice(0, 10), 1],
    ]);
    const first = await env.EVENT_ARCHIVE.get(archives[0].key);
    const events = await decodeArchive(await first!.arrayBuffer(), archives[0].sha256);
    expect(events.map((e) => e.id)).toEqual(oldIds.slice(0, 2));
    expect(events[0]).toMatchObject({ type: "council.proposed", subject: "prop_old", payload: { title: "An old proposal", n: 1 } });

    // The export after archiving is byte for byte the export before it.
    const after = await send("/v1/audit/export");
    const strip = (text: string) => lines(text).filter((l) => l.kind !== "header");
    expect(strip(after.text)).toEqual(strip(before.text));
    // A second run finds nothing more to archive.
    expect(JSON.stringify((await call("/v1/admin/ticks/events", { method: "POST" })).body)).toContain('"archived":0');
  });

  it("exports archived entries that the offline verifier checks link by link and signature by signature", async () => {
    const res = await send("/v1/audit/export");
    const out = lines(res.text);
    const entries = out.filter((l) => l.kind === "event");
    expect(entries.filter((e) => oldIds.includes(e.id)).map((e) => e.subject)).toEqual(["prop_old", "node_old", "appr_old"]);
    const verdict = await verifyExport(res.text.trim().split("\n"));
    expect(verdict).toMatchObject({ ok: true, events: entries.length });
  });

  it("exports the entries of a replaced archive object as missing, so the verifier names the first that breaks", async () => {
    const archive = await env.DB.prepare(`SELECT key FROM event_archives ORDER BY first_id LIMIT 1`).first<{ key: string }>();
    const original = await env.EVENT_ARCHIVE.get(archive!.key);
    const bytes = await original!.arrayBuffer();
    await env.EVENT_ARCHIVE.put(archive!.key, new Uint8Array([...new Uint8Array(bytes)].reverse()));
    try {
      const res = await send("/v1/audit/export");
      expect(res.status).toBe(200);
      const out = lines(res.text);
      expect(out.filter((l) => l.kind === "event" && oldIds.slice(0, 2).includes(l.id))).toEqual([]);
      const verdict = await verifyExport(res.text.trim().split("\n"));
      expect(verdict.ok).toBe(false);
      expect(JSON.stringify(verdict)).toContain("missing");
    } finally {
      await env.EVENT_ARCHIVE.put(archive!.key, bytes);
    }
  });
});
