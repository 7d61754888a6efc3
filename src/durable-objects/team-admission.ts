import { DurableObject } from "cloudflare:workers";
import * as z from "zod";
import type { Env } from "../env";

/**
 * The fleet's ephemeral-scaffold admission (seed 002 "容量"): at most `max_active` role members
 * live at once; a spawn beyond that waits in a durable FIFO queue instead of failing at once. Each
 * ticket belongs to a round, and a round that ends in any way purges exactly its own queued tickets
 * (and frees its active ones), never a sibling round's. Every method is one synchronous SQL block.
 * Invalid requests never get here: the caller validates first, and the input is parsed again below.
 */
export class TeamAdmission extends DurableObject<Env> {
  private readonly sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(`
      CREATE TABLE IF NOT EXISTS tickets (
        ticket_id TEXT PRIMARY KEY,
        round_id TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('active', 'queued', 'expired')),
        seq INTEGER NOT NULL,
        enqueued_at INTEGER NOT NULL,
        expires_at INTEGER
      );
      CREATE INDEX IF NOT EXISTS tickets_fifo ON tickets(status, seq);
      CREATE INDEX IF NOT EXISTS tickets_round ON tickets(round_id);
      CREATE TABLE IF NOT EXISTS counter (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL);
      INSERT OR IGNORE INTO counter (id, seq) VALUES (1, 0);
    `);
  }

  /**
   * Admits a spawn now, queues it behind earlier waiters, or refuses it when the queue is full. A
   * ticket asked for again answers with its current state (a retried call never queues twice).
   */
  async admit(input: AdmitInput): Promise<AdmitOutcome> {
    const parsed = admitInput.safeParse(input);
    if (!parsed.success) return { status: "refused", reason: "invalid_request" };
    const req = parsed.data;
    this.expireQueued(req.now);
    const existing = this.sql.exec<TicketRow>(`SELECT * FROM tickets WHERE ticket_id = ?`, req.ticket_id).toArray()[0];
    if (existing) return this.describe(existing);
    const queued = this.count("queued");
    if (queued === 0 && this.count("active") < req.limits.max_active) {
      this.insert(req, "active", null);
      return { status: "active" };
    }
    if (queued >= req.limits.max_depth) return { status: "refused", reason: "queue_full" };
    this.insert(req, "queued", req.now + req.limits.ttl_ms);
    this.promote(req.limits.max_active, req.now);
    const row = this.sql.exec<TicketRow>(`SELECT * FROM tickets WHERE ticket_id = ?`, req.ticket_id).one();
    return this.describe(row);
  }

  /** A member's scaffold is gone: its slot goes to the oldest waiter(s). */
  async release(input: ReleaseInput): Promise<{ released: boolean; promoted: AdmittedTicket[] }> {
    const req = releaseInput.parse(input);
    const gone = this.sql.exec(`DELETE FROM tickets WHERE ticket_id = ? RETURNING ticket_id`, req.ticket_id).toArray();
    return { released: gone.length > 0, promoted: this.promote(req.limits.max_active, req.now) };
  }

  /** A round ended (any terminal state): purge exactly its queued tickets, free its active ones. */
  async finishRound(input: FinishRoundInput): Promise<{ purged: string[]; released: string[]; promoted: AdmittedTicket[] }> {
    const req = finishRoundInput.parse(input);
    const rows = this.sql
      .exec<{ ticket_id: string; status: string }>(`DELETE FROM tickets WHERE round_id = ? RETURNING ticket_id, status`, req.round_id)
      .toArray();
    return {
      purged: rows.filter((r) => r.status !== "active").map((r) => r.ticket_id),
      released: rows.filter((r) => r.status === "active").map((r) => r.ticket_id),
      promoted: this.promote(req.limits.max_active, req.now),
    };
  }

  /** Hands over (and forgets) the tickets whose wait ran out, so their stages fail explicitly. */
  async collectExpired(input: {
    now: number;
    limits: AdmissionLimits;
  }): Promise<{ expired: AdmittedTicket[]; promoted: AdmittedTicket[] }> {
    const req = z.object({ now: z.number().int(), limits: admissionLimits }).parse(input);
    this.expireQueued(req.now);
    const expired = this.sql
      .exec<{ ticket_id: string; round_id: string }>(`DELETE FROM tickets WHERE status = 'expired' RETURNING ticket_id, round_id`)
      .toArray();
    return { expired, promoted: this.promote(req.limits.max_active, req.now) };
  }

  async status(): Promise<{ active: AdmittedTicket[]; queued: (AdmittedTicket & { position: number })[] }> {
    const active = this.sql.exec<TicketRow>(`SELECT * FROM tickets WHERE status = 'active' ORDER BY seq`).toArray();
    const queued = this.sql.exec<TicketRow>(`SELECT * FROM tickets WHERE status = 'queued' ORDER BY seq`).toArray();
    return {
      active: active.map((t) => ({ ticket_id: t.ticket_id, round_id: t.round_id })),
      queued: queued.map((t, i) => ({ ticket_id: t.ticket_id, round_id: t.round_id, position: i + 1 })),
    };
  }

  private insert(req: z.infer<typeof admitInput>, status: "active" | "queued", expiresAt: number | null) {
    const seq = this.sql.exec<{ seq: number }>(`UPDATE counter SET seq = seq + 1 WHERE id = 1 RETURNING seq`).one().seq;
    this.sql.exec(
      `INSERT INTO tickets (ticket_id, round_id, status, seq, enqueued_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)`,
      req.ticket_id,
      req.round_id,
      status,
      seq,
      req.now,
      expiresAt,
    );
  }

  private count(status: "active" | "queued"): number {
    return this.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM tickets WHERE status = ?`, status).one().n;
  }

  /** Waiting too long is not silently dropped: the ticket turns `expired` until collected. */
  private expireQueued(now: number) {
    this.sql.exec(`UPDATE tickets SET status = 'expired' WHERE status = 'queued' AND expires_at <= ?`, now);
  }

  /** Oldest waiters first, while there is room. */
  private promote(maxActive: number, now: number): AdmittedTicket[] {
    this.expireQueued(now);
    const room = maxActive - this.count("active");
    if (room <= 0) return [];
    return this.sql
      .exec<{ ticket_id: string; round_id: string; seq: number }>(
        `UPDATE tickets SET status = 'active', expires_at = NULL
         WHERE ticket_id IN (SELECT ticket_id FROM tickets WHERE status = 'queued' ORDER BY seq LIMIT ?)
         RETURNING ticket_id, round_id, seq`,
        room,
      )
      .toArray()
      .sort((a, b) => a.seq - b.seq)
      .map((r) => ({ ticket_id: r.ticket_id, round_id: r.round_id }));
  }

  private describe(row: TicketRow): AdmitOutcome {
    if (row.status === "active") return { status: "active" };
    if (row.status === "expired") return { status: "refused", reason: "expired" };
    const position = this.sql
      .exec<{ n: number }>(`SELECT COUNT(*) AS n FROM tickets WHERE status = 'queued' AND seq <= ?`, row.seq)
      .one().n;
    return { status: "queued", position };
  }
}

const admissionLimits = z.object({
  max_active: z.number().int().min(1),
  max_depth: z.number().int().min(0),
  ttl_ms: z.number().int().min(1),
});
export type AdmissionLimits = z.infer<typeof admissionLimits>;

const ticketId = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/);

const admitInput = z.object({ ticket_id: ticketId, round_id: ticketId, limits: admissionLimits, now: z.number().int() });
export type AdmitInput = z.input<typeof admitInput>;
const releaseInput = z.object({ ticket_id: ticketId, limits: admissionLimits, now: z.number().int() });
export type ReleaseInput = z.input<typeof releaseInput>;
const finishRoundInput = z.object({ round_id: ticketId, limits: admissionLimits, now: z.number().int() });
export type FinishRoundInput = z.input<typeof finishRoundInput>;

export type AdmitOutcome =
  | { status: "active" }
  | { status: "queued"; position: number }
  | { status: "refused"; reason: "queue_full" | "expired" | "invalid_request" };

export interface AdmittedTicket {
  ticket_id: string;
  round_id: string;
}

interface TicketRow extends Record<string, SqlStorageValue> {
  ticket_id: string;
  round_id: string;
  status: "active" | "queued" | "expired";
  seq: number;
  enqueued_at: number;
  expires_at: number | null;
}
