import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { openExport } from "../../../src/audit/export";
import { loadHead } from "../../../src/audit/seal";
import { getDb } from "../../../src/db/client";
import { getAuditSealer } from "../../../src/durable-objects/audit-sealer-rpc";
import { appendEvent } from "../../../src/lib/events";
import { createOperator } from "../../factories";
import { send } from "../../factories/http";

const db = () => getDb(env.DB);
const SECRET = `secret-${crypto.randomUUID()}`;

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

beforeAll(async () => {
  const d = db();
  const now = new Date();
  await d.batch([
    appendEvent(d, { type: "council.proposed", subject: "prop_1", payload: { title: "A public proposal" } }, now),
    appendEvent(d, { type: "approval.requested", subject: SECRET, payload: { note: SECRET, amount: 42 } }, now),
    appendEvent(d, { type: "node.registered", subject: "node_1", payload: { name: "n1" } }, now),
    appendEvent(d, { type: `secret.${SECRET}`, subject: null, payload: {} }, now),
  ]);
  await sealAll();
});

describe("GET /v1/audit/export", () => {
  it("is for admins only", async () => {
    expect((await send("/v1/audit/export", { token: null })).status).toBe(401);
    const viewer = await createOperator("viewer", "audit-viewer");
    expect((await send("/v1/audit/export", { token: viewer })).status).toBe(403);
  });

  it("streams NDJSON: a header, every entry in seq order with its checkpoint after it, and an end line", async () => {
    const res = await send("/v1/audit/export");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/x-ndjson; charset=utf-8");
    const out = lines(res.text);
    const [header, ...rest] = out;
    const end = rest.pop()!;
    expect(header).toMatchObject({ kind: "header", format: "crewplane-audit-export/1", scope: "admin", from_seq: 1 });
    expect(header!.keys).toHaveLength(1);
    // By default the export ends at the last checkpoint: everything in it is signed.
    expect(header!.to_seq).toBe(header!.last_checkpoint_seq);
    const entries = rest.filter((l) => l.kind === "event");
    expect(entries.map((e) => e.seq)).toEqual(Array.from({ length: header!.to_seq }, (_, i) => i + 1));
    expect(rest.at(-1)).toMatchObject({ kind: "checkpoint", seq: header!.to_seq });
    for (const [i, l] of rest.entries()) if (l.kind === "checkpoint") expect(rest[i - 1]).toMatchObject({ kind: "event", seq: l.seq });
    expect(Object.keys(entries.find((e) => e.type === "approval.requested")!).sort()).toEqual(
      ["kind", "seq", "prev_hash", "hash", "id", "type", "subject", "payload", "created_at"].sort(),
    );
    expect(end).toEqual({
      kind: "end",
      events: entries.length,
      redacted: 0,
      checkpoints: rest.filter((l) => l.kind === "checkpoint").length,
      last_seq: header!.to_seq,
      next_from_seq: null,
    });
  });

  it("takes a seq range and refuses a bad one with 422", async () => {
    const out = lines((await send("/v1/audit/export?from_seq=2&to_seq=3")).text);
    expect(out.filter((l) => l.kind === "event").map((l) => l.seq)).toEqual([2, 3]);
    expect(out[0]).toMatchObject({ from_seq: 2, to_seq: 3 });
    for (const q of ["from_seq=3&to_seq=2", "from_seq=0", "to_seq=abc", "from_seq=1&limit=5", "to_seq=9999999999999999"]) {
      const res = await send(`/v1/audit/export?${q}`);
      expect(res.status, q).toBe(422);
      expect(res.json.code).toBe("validation_failed");
    }
  });
});

describe("GET /v1/public/audit/export", () => {
  it("shows public events whole and every other event as seq, prev_hash and hash only, leaking none of its fields", async () => {
    const res = await send("/v1/public/audit/export", { token: null });
    expect(res.status).toBe(200);
    expect(res.text).not.toContain(SECRET);
    expect(res.text).not.toContain("approval.requested");
    const out = lines(res.text);
    expect(out[0]).toMatchObject({
      kind: "header",
      scope: "public",
      public_types: ["council.", "governance.", "project.", "swarm_task.", "node.registered"],
    });
    const admin = lines((await send("/v1/audit/export")).text);
    const entries = out.filter((l) => l.kind === "event" || l.kind === "redacted");
    expect(entries).toHaveLength(admin.filter((l) => l.kind === "event").length);
    for (const e of entries) {
      const full = admin.find((a) => a.kind === "event" && a.seq === e.seq)!;
      if (e.kind === "redacted") {
        expect(e).toEqual({ kind: "redacted", seq: full.seq, prev_hash: full.prev_hash, hash: full.hash });
        expect(full.type).not.toMatch(/^(council\.|governance\.|project\.|swarm_task\.|node\.registered)/);
      } else {
        expect(e).toEqual(full);
      }
    }
    expect(entries.some((e) => e.kind === "event" && e.type === "council.proposed")).toBe(true);
    expect(entries.filter((e) => e.kind === "redacted").length).toBeGreaterThanOrEqual(2);
    expect(out.filter((l) => l.kind === "checkpoint")).toEqual(admin.filter((l) => l.kind === "checkpoint"));
  });
});

describe("export paging", () => {
  it("reads page by page and cuts a long range into segments that continue where the last ended", async () => {
    const whole = await new Response((await openExport(db(), { scope: "admin", now: new Date() })).stream).text();
    const seg1 = await openExport(db(), { scope: "admin", now: new Date(), pageSize: 2, maxEvents: 3 });
    expect(seg1).toMatchObject({ fromSeq: 1, toSeq: 3, nextFromSeq: 4 });
    const l1 = lines(await new Response(seg1.stream).text());
    expect(l1.at(-1)).toMatchObject({ kind: "end", last_seq: 3, next_from_seq: 4 });
    const seg2 = await openExport(db(), { scope: "admin", now: new Date(), fromSeq: 4, pageSize: 2 });
    const l2 = lines(await new Response(seg2.stream).text());
    const body = (ls: Record<string, any>[]) => ls.filter((l) => l.kind !== "header" && l.kind !== "end");
    expect([...body(l1), ...body(l2)]).toEqual(body(lines(whole)));
  });
});

describe("GET /v1/audit/status", () => {
  it("reports the head, the last checkpoint, what is unsigned and the sealing lag", async () => {
    const res = await send("/v1/audit/status");
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      sealing: "on",
      signing: "ok",
      kid: expect.stringMatching(/^[0-9a-f]{16}$/),
      head: { seq: expect.any(Number), hash: expect.stringMatching(/^[0-9a-f]{64}$/) },
      lag_ms: { n: expect.any(Number) },
    });
    expect((await send("/v1/audit/status", { token: null })).status).toBe(401);
  });
});
