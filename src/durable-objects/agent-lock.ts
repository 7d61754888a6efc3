import { DurableObject } from "cloudflare:workers";
import { z } from "zod";
import type { Env } from "../env";

/**
 * One agent's evolution lock (seed 003 §6.4: one reflection or evolution per agent at a time). A
 * holder takes it as a lease: a holder that dies frees it when the lease runs out, checked lazily on
 * every call. Every method is one synchronous block of `ctx.storage.sql` (no `await` inside), so under
 * the input gate racing acquires have exactly one winner.
 */
export class AgentLock extends DurableObject<Env> {
  private readonly sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(`CREATE TABLE IF NOT EXISTS lock (id INTEGER PRIMARY KEY CHECK (id = 1), holder TEXT NOT NULL, until INTEGER NOT NULL)`);
  }

  /** Takes the lock for `holder` until `now + ttl_ms`; the same holder again renews it. */
  async acquire(input: AcquireInput): Promise<{ ok: true; until: number } | { ok: false; holder: string; until: number }> {
    const req = acquireInput.parse(input);
    const current = this.sql.exec<{ holder: string; until: number }>(`SELECT holder, until FROM lock WHERE id = 1`).toArray()[0];
    if (current && current.until > req.now && current.holder !== req.holder)
      return { ok: false, holder: current.holder, until: current.until };
    const until = req.now + req.ttl_ms;
    this.sql.exec(
      `INSERT INTO lock (id, holder, until) VALUES (1, ?, ?) ON CONFLICT(id) DO UPDATE SET holder = excluded.holder, until = excluded.until`,
      req.holder,
      until,
    );
    return { ok: true, until };
  }

  /** Gives the lock back; only its holder can (a late release of a lapsed lease changes nothing). */
  async release(input: { holder: string }): Promise<{ released: boolean }> {
    const { holder } = z.object({ holder: z.string().min(1).max(200) }).parse(input);
    const rows = this.sql.exec(`DELETE FROM lock WHERE id = 1 AND holder = ? RETURNING holder`, holder).toArray();
    return { released: rows.length > 0 };
  }

  async status(input: { now: number }): Promise<{ holder: string; until: number } | null> {
    const { now } = z.object({ now: z.number().int() }).parse(input);
    const current = this.sql.exec<{ holder: string; until: number }>(`SELECT holder, until FROM lock WHERE id = 1`).toArray()[0];
    return current && current.until > now ? current : null;
  }
}

const acquireInput = z.object({
  holder: z.string().min(1).max(200),
  ttl_ms: z
    .number()
    .int()
    .min(1_000)
    .max(24 * 3_600_000),
  now: z.number().int(),
});
export type AcquireInput = z.input<typeof acquireInput>;
