import { DurableObject } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import * as z from "zod";
import { CHECKPOINT_INTERVAL_MS, lastCheckpoint, signCheckpoint, type CheckpointRow } from "../audit/checkpoint";
import { loadSigner, type SignerState } from "../audit/keys";
import { loadHead, sealPage, type Head } from "../audit/seal";
import { auditLag, type LagFigures } from "../audit/status";
import { getDb, type Db } from "../db/client";
import type { Env } from "../env";
import { loadClock, type Clock } from "../lib/clock";

/** Events per sealing statement, and statements per run before the run yields to a fresh alarm. */
export const SEAL_PAGE = 200;
const PAGES_PER_RUN = 5;
/** While a run finds work, or a poke asked to watch, the next run comes this soon. */
export const ACTIVE_INTERVAL_MS = 250;
/** A run that failed (D1 unavailable) is tried again after this. */
const RETRY_MS = 5_000;
const MAX_WATCH_MS = 60_000;

export type SigningState = "ok" | "no_key" | "invalid_key" | "key_retired";

export interface SealReport {
  sealed: number;
  head: { seq: number; hash: string };
  /** More unsealed events than one run seals; the next run is already due. */
  backlog: boolean;
  checkpoint: { seq: number; at: string; kid: string } | null;
  signing: SigningState;
}

export interface SealerStatus {
  sealing: "on" | "off";
  head: { seq: number; hash: string; event_id: number };
  unsealed: number;
  last_checkpoint: { seq: number; hash: string; at: string; kid: string } | null;
  /** Sealed entries after the last checkpoint: not yet covered by a signature. */
  unsigned: number;
  signing: SigningState;
  kid: string | null;
  last_error: string | null;
  lag_ms: LagFigures;
}

const pokeInput = z.object({ windowMs: z.number().int().min(0).max(MAX_WATCH_MS).optional() }).optional();
const statusInput = z.object({ lagWindow: z.number().int().min(1).max(100_000).optional() }).optional();

/**
 * The single writer of the audit chain (issue 24): seals new events in commit order, then signs
 * the head as a checkpoint when the last one is CHECKPOINT_INTERVAL_MS old. Writers of events are
 * untouched; sealing is triggered by a throttled poke after write requests (at most one a second
 * per isolate), by the every-minute `audit` tick, and by this object's own alarm, which comes back
 * every ACTIVE_INTERVAL_MS while runs find work or a poke's watch window is open, and once more when
 * an unsigned tail is due for its checkpoint.
 *
 * Runs are serialised in memory (D1 calls open the input gate, so two runs could otherwise
 * interleave); if they ever were not, the chain table's trigger refuses any insert that is not the
 * next link, and the run starts over from the head D1 holds.
 */
export class AuditSealer extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  private head: Head | null = null;
  private checkpoint: CheckpointRow | null | undefined = undefined;
  private signer: Promise<SignerState> | null = null;
  private signing: SigningState = "ok";
  private work: Promise<unknown> = Promise.resolve();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(`CREATE TABLE IF NOT EXISTS sealer_state (k TEXT PRIMARY KEY, v TEXT NOT NULL)`);
  }

  /**
   * A write happened (or may have): a run now, and runs every ACTIVE_INTERVAL_MS until `windowMs`
   * from now, so writes the caller's throttle did not report are sealed by the last of them.
   */
  async poke(input?: { windowMs?: number }): Promise<{ watching_until: number }> {
    const windowMs = pokeInput.parse(input)?.windowMs ?? 1_000;
    const now = Date.now();
    const until = Math.max(this.watchUntil(), now + windowMs);
    this.setState("watch_until", String(until));
    if (this.enabled()) {
      const alarm = await this.ctx.storage.getAlarm();
      if (alarm === null || alarm > now) await this.ctx.storage.setAlarm(now);
    }
    return { watching_until: until };
  }

  /** Seals what is there now and signs a due checkpoint (the tick, an admin, tests). */
  async seal(input?: { windowMs?: number }): Promise<SealReport> {
    if (!this.enabled()) throw new Error("audit sealing is off (AUDIT_SEALING=off)");
    const windowMs = pokeInput.parse(input)?.windowMs ?? 0;
    const report = await this.exclusive(() => this.run());
    if (windowMs > 0) this.setState("watch_until", String(Math.max(this.watchUntil(), Date.now() + windowMs)));
    await this.schedule(report);
    return report;
  }

  async status(input?: { lagWindow?: number }): Promise<SealerStatus> {
    const lagWindow = statusInput.parse(input)?.lagWindow ?? 1_000;
    const db = getDb(this.env.DB);
    const head = await loadHead(db);
    const last = await lastCheckpoint(db);
    const signer = await this.loadSigner();
    const [unsealed] = await db.all<{ n: number }>(sql`SELECT COUNT(*) AS n FROM events WHERE id > ${head.eventId}`);
    return {
      sealing: this.enabled() ? "on" : "off",
      head: { seq: head.seq, hash: head.hash, event_id: head.eventId },
      unsealed: unsealed?.n ?? 0,
      last_checkpoint: last ? { seq: last.seq, hash: last.hash, at: last.at, kid: last.kid } : null,
      unsigned: head.seq - (last?.seq ?? 0),
      signing: signer.ok ? this.signing : signer.reason,
      kid: signer.ok ? signer.signer.kid : null,
      last_error: this.getState("last_error"),
      lag_ms: await auditLag(db, head.seq - lagWindow, head.seq),
    };
  }

  override async alarm(): Promise<void> {
    if (!this.enabled()) return;
    let report: SealReport;
    try {
      report = await this.exclusive(() => this.run());
    } catch (err) {
      console.error("audit sealer: run failed; retrying", err);
      this.setState("last_error", `${new Date().toISOString()} ${err instanceof Error ? err.message : String(err)}`);
      await this.ctx.storage.setAlarm(Date.now() + RETRY_MS);
      return;
    }
    await this.schedule(report);
  }

  private async run(): Promise<SealReport> {
    const db = getDb(this.env.DB);
    const clock = await loadClock(this.env);
    let head = this.head ?? (await loadHead(db));
    let sealed = 0;
    let full = false;
    try {
      for (let i = 0; i < PAGES_PER_RUN; i++) {
        const page = await sealPage(db, head, clock.now().toISOString(), SEAL_PAGE);
        head = page.head;
        sealed += page.sealed;
        full = page.sealed === SEAL_PAGE;
        if (!full) break;
      }
    } catch (err) {
      // A stale head (another run, a restored database) or D1 failing: start from D1's head next time.
      this.head = null;
      this.checkpoint = undefined;
      throw err;
    }
    this.head = head;
    const checkpoint = await this.checkpointIfDue(db, clock, head);
    return {
      sealed,
      head: { seq: head.seq, hash: head.hash },
      backlog: full,
      checkpoint: checkpoint ? { seq: checkpoint.seq, at: checkpoint.at, kid: checkpoint.kid } : null,
      signing: this.signing,
    };
  }

  /** Signs the head when it moved and the last checkpoint is CHECKPOINT_INTERVAL_MS old (or there is none). */
  private async checkpointIfDue(db: Db, clock: Clock, head: Head): Promise<CheckpointRow | null> {
    if (this.checkpoint === undefined) this.checkpoint = await lastCheckpoint(db);
    const last = this.checkpoint;
    if (head.seq <= (last?.seq ?? 0) || this.checkpointDueAt(clock) > clock.nowMs()) return null;
    const signer = await this.loadSigner();
    if (!signer.ok) {
      this.signing = signer.reason;
      return null;
    }
    try {
      const outcome = await signCheckpoint(db, signer.signer, head, clock.now());
      if ("refused" in outcome) {
        this.signing = outcome.refused;
        return null;
      }
      this.signing = "ok";
      this.checkpoint = outcome.signed;
      return outcome.signed;
    } catch (err) {
      this.checkpoint = undefined;
      throw err;
    }
  }

  /** Clock ms at which the head may be signed again (a checkpoint "in the future", after a test clock moved back, is due now). */
  private checkpointDueAt(clock: Clock): number {
    const last = this.checkpoint;
    if (!last) return 0;
    const at = Date.parse(last.at);
    return at > clock.nowMs() ? 0 : at + CHECKPOINT_INTERVAL_MS;
  }

  /** One alarm at the earliest of: now (backlog), soon (active or watching), the unsigned tail's checkpoint. */
  private async schedule(report: SealReport): Promise<void> {
    const now = Date.now();
    const candidates: number[] = [];
    if (report.backlog) candidates.push(now);
    else if (report.sealed > 0 || now < this.watchUntil()) candidates.push(now + ACTIVE_INTERVAL_MS);
    if (this.signing === "ok" && report.head.seq > (this.checkpoint?.seq ?? 0)) {
      const clock = await loadClock(this.env);
      candidates.push(Math.max(now, this.checkpointDueAt(clock) - clock.offsetMs));
    }
    // A poke during the run may have set an earlier alarm: keep it.
    const existing = await this.ctx.storage.getAlarm();
    if (existing !== null) candidates.push(existing);
    if (candidates.length === 0) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(Math.min(...candidates));
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.work.then(fn, fn);
    this.work = run.catch(() => undefined);
    return run;
  }

  private loadSigner(): Promise<SignerState> {
    this.signer ??= loadSigner(this.env.AUDIT_SIGNING_KEY);
    return this.signer;
  }

  private enabled(): boolean {
    return this.env.AUDIT_SEALING !== "off";
  }

  private watchUntil(): number {
    return Number(this.getState("watch_until") ?? 0);
  }

  private getState(k: string): string | null {
    return this.sql.exec<{ v: string }>(`SELECT v FROM sealer_state WHERE k = ?`, k).toArray()[0]?.v ?? null;
  }

  private setState(k: string, v: string): void {
    this.sql.exec(`INSERT INTO sealer_state (k, v) VALUES (?, ?) ON CONFLICT(k) DO UPDATE SET v = excluded.v`, k, v);
  }
}
