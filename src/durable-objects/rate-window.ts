import { DurableObject } from "cloudflare:workers";
import * as z from "zod";
import type { Env } from "../env";
import { loadClock } from "../lib/clock";

/**
 * A sliding-window counter for one key (the object's name): at most `limit` hits in any
 * `windowMs`. Generic on purpose: `[dispatch_guard]` keeps one per employee (`dispatch:<id>`), and
 * Team-as-Agent a `role_team` window beside it. Each call is one synchronous `ctx.storage.sql`
 * block with no `await` inside, so under the input gate a check-and-take is atomic: N concurrent
 * takes against a limit L succeed exactly min(N, L) times.
 */
export class RateWindow extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  /** The caller's test-clock offset, so clock-time expiries map onto a real alarm. */
  private offsetMs = 0;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(`
      CREATE TABLE IF NOT EXISTS hits (
        token TEXT PRIMARY KEY,
        at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
      );
      CREATE INDEX IF NOT EXISTS hits_at ON hits(at);
    `);
  }

  /** Records one hit if the window has room; a refused take records nothing. */
  async take(input: TakeInput): Promise<TakeResult> {
    const req = takeInput.parse(input);
    this.offsetMs = req.now - Date.now();
    const since = req.now - req.windowMs;
    this.sql.exec(`DELETE FROM hits WHERE at <= ?`, since);
    // The same token again (a retried call, a relaunched spawn) was already admitted: it counts once.
    const held = this.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM hits WHERE token = ?`, req.token).one().n;
    if (held > 0) {
      return { ok: true, count: this.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM hits`).one().n, limit: req.limit };
    }
    const { n, oldest } = this.sql.exec<{ n: number; oldest: number | null }>(`SELECT COUNT(*) AS n, MIN(at) AS oldest FROM hits`).one();
    if (n >= req.limit) {
      const retryAfterMs = oldest === null ? req.windowMs : Math.max(1, oldest + req.windowMs - req.now);
      return { ok: false, count: n, limit: req.limit, retry_after_ms: retryAfterMs };
    }
    // A repeated token (a retried call) counts once.
    this.sql.exec(
      `INSERT INTO hits (token, at, expires_at) VALUES (?, ?, ?) ON CONFLICT(token) DO NOTHING`,
      req.token,
      req.now,
      req.now + req.windowMs,
    );
    const count = this.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM hits`).one().n;
    await this.scheduleCleanup();
    return { ok: true, count, limit: req.limit };
  }

  /** Gives a hit back (the work it admitted was not created after all). */
  async release(input: { token: string }): Promise<{ released: boolean }> {
    const { token } = z.object({ token: z.string().min(1).max(200) }).parse(input);
    return { released: this.sql.exec(`DELETE FROM hits WHERE token = ?`, token).rowsWritten > 0 };
  }

  /** Hits inside the window now, without taking one. */
  async peek(input: { windowMs: number; now: number }): Promise<{ count: number }> {
    const req = z.object({ windowMs: z.number().int().min(1), now: z.number().int() }).parse(input);
    return { count: this.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM hits WHERE at > ?`, req.now - req.windowMs).one().n };
  }

  override async alarm(): Promise<void> {
    const now = (await loadClock(this.env)).nowMs();
    this.offsetMs = now - Date.now();
    this.sql.exec(`DELETE FROM hits WHERE expires_at <= ?`, now);
    await this.scheduleCleanup();
  }

  /** One alarm at the latest expiry: by then every hit is stale and the object's storage empties. */
  private async scheduleCleanup() {
    const latest = this.sql.exec<{ m: number | null }>(`SELECT MAX(expires_at) AS m FROM hits`).one().m;
    if (latest === null) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(Math.max(Date.now(), latest - this.offsetMs));
  }
}

const takeInput = z.object({
  limit: z.number().int().min(1).max(1_000_000),
  windowMs: z
    .number()
    .int()
    .min(1)
    .max(30 * 86_400_000),
  now: z.number().int(),
  /** Identifies the hit (e.g. the task id), so it can be released and a retried call counts once. */
  token: z.string().min(1).max(200),
});
export type TakeInput = z.input<typeof takeInput>;
export type TakeResult = { ok: true; count: number; limit: number } | { ok: false; count: number; limit: number; retry_after_ms: number };
