import { DurableObject } from "cloudflare:workers";
import * as z from "zod";
import type { Env } from "../env";

/**
 * The global evolution semaphore (seed 003 §6.4: at most 8 reflection or evolution runs across all
 * agents). One object for the fleet; each slot is a lease that lapses if its holder dies, checked
 * lazily. One synchronous `ctx.storage.sql` block per call, so N racing acquires against a limit L
 * get exactly min(N, L) slots.
 */
export class EvolutionSemaphore extends DurableObject<Env> {
  private readonly sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(`CREATE TABLE IF NOT EXISTS slots (holder TEXT PRIMARY KEY, until INTEGER NOT NULL)`);
  }

  async acquire(input: SlotInput): Promise<{ ok: true; held: number } | { ok: false; held: number; limit: number }> {
    const req = slotInput.parse(input);
    this.sql.exec(`DELETE FROM slots WHERE until <= ?`, req.now);
    const mine = this.sql.exec(`SELECT 1 FROM slots WHERE holder = ?`, req.holder).toArray().length > 0;
    const held = this.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM slots`).one().n;
    if (!mine && held >= req.limit) return { ok: false, held, limit: req.limit };
    this.sql.exec(
      `INSERT INTO slots (holder, until) VALUES (?, ?) ON CONFLICT(holder) DO UPDATE SET until = excluded.until`,
      req.holder,
      req.now + req.ttl_ms,
    );
    return { ok: true, held: this.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM slots`).one().n };
  }

  async release(input: { holder: string }): Promise<{ released: boolean }> {
    const { holder } = z.object({ holder: z.string().min(1).max(200) }).parse(input);
    return { released: this.sql.exec(`DELETE FROM slots WHERE holder = ? RETURNING holder`, holder).toArray().length > 0 };
  }

  async status(input: { now: number }): Promise<{ held: number; holders: string[] }> {
    const { now } = z.object({ now: z.number().int() }).parse(input);
    const rows = this.sql.exec<{ holder: string }>(`SELECT holder FROM slots WHERE until > ? ORDER BY holder`, now).toArray();
    return { held: rows.length, holders: rows.map((r) => r.holder) };
  }
}

const slotInput = z.object({
  holder: z.string().min(1).max(200),
  limit: z.number().int().min(1).max(1_000),
  ttl_ms: z
    .number()
    .int()
    .min(1_000)
    .max(24 * 3_600_000),
  now: z.number().int(),
});
export type SlotInput = z.input<typeof slotInput>;
