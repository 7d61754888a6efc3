import { DurableObject } from "cloudflare:workers";
import * as z from "zod";
import type { Env } from "../env";

/**
 * One agent's evolution lock (seed 003 §6.4: one reflection or evolution per agent at a time). A
 * holder takes it as a lease: a holder that dies frees it when the lease runs out, checked lazily on
 * every call. Every method is one synchronous block of `ctx.storage.sql` (no `await` inside), so under
 * the input gate racing acquires have exactly one winner.
 */
export class AgentLock extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  /**
   * The turn (`enterTurn`): who writes now, until when (real ms), and who waits, in arrival order.
   * Kept in memory on purpose: it only orders writers that would otherwise race and retry; if the
   * object is evicted the order is lost, and the writers' own conditional writes still keep them correct.
   */
  private turn: { holder: string; until: number } | null = null;
  private readonly line: { holder: string; ttlMs: number; admit: () => void }[] = [];
  private expiry: ReturnType<typeof setTimeout> | undefined;

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

  /**
   * Waits for this object's turn, first come first served, up to `wait_ms`; then `holder` has it for
   * up to `ttl_ms` or until `leaveTurn`. A writer of one agent's state (a conversation's close) enters
   * it so that concurrent writers queue instead of colliding and retrying (used on its own object,
   * `turn:<agent>`, apart from the evolution lock). Real time: it bounds requests.
   */
  async enterTurn(input: EnterTurnInput): Promise<{ ok: true } | { ok: false; reason: "wait_timeout" }> {
    const req = enterTurnInput.parse(input);
    const now = Date.now();
    if (!this.turn || this.turn.until <= now) {
      this.give(req.holder, req.ttl_ms);
      return { ok: true };
    }
    return new Promise((resolve) => {
      const entry = {
        holder: req.holder,
        ttlMs: req.ttl_ms,
        admit: () => {
          clearTimeout(timer);
          resolve({ ok: true });
        },
      };
      const timer = setTimeout(() => {
        const at = this.line.indexOf(entry);
        if (at >= 0) this.line.splice(at, 1);
        resolve({ ok: false, reason: "wait_timeout" });
      }, req.wait_ms);
      this.line.push(entry);
    });
  }

  /** Ends `holder`'s turn and admits the next in line; a late leave (its turn lapsed) changes nothing. */
  async leaveTurn(input: { holder: string }): Promise<{ left: boolean }> {
    const { holder } = z.object({ holder: z.string().min(1).max(200) }).parse(input);
    if (this.turn?.holder !== holder) return { left: false };
    this.turn = null;
    this.handOn();
    return { left: true };
  }

  private give(holder: string, ttlMs: number) {
    this.turn = { holder, until: Date.now() + ttlMs };
    // A holder that never leaves (it died) loses its turn when it lapses, and the line moves on.
    if (this.expiry !== undefined) clearTimeout(this.expiry);
    this.expiry = setTimeout(() => {
      if (this.turn && this.turn.until <= Date.now()) {
        this.turn = null;
        this.handOn();
      }
    }, ttlMs);
  }

  private handOn() {
    const next = this.line.shift();
    if (!next) {
      if (this.expiry !== undefined) clearTimeout(this.expiry);
      return;
    }
    this.give(next.holder, next.ttlMs);
    next.admit();
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

const enterTurnInput = z.object({
  holder: z.string().min(1).max(200),
  ttl_ms: z.number().int().min(100).max(300_000),
  wait_ms: z.number().int().min(0).max(60_000),
});
export type EnterTurnInput = z.input<typeof enterTurnInput>;
