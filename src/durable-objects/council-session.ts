import { DurableObject } from "cloudflare:workers";
import { and, eq } from "drizzle-orm";
import * as z from "zod";
import { getDb, type Db } from "../db/client";
import { isGuardFailure, isUniqueFailure } from "../db/guard";
import { councilDialogs, councilElectorate, councilVotes } from "../db/schema";
import type { Env } from "../env";
import { loadClock } from "../lib/clock";
import { newId } from "../lib/ids";
import { readCouncilConfigCached, type CouncilConfig } from "../council/config";
import { advance, checkNeeds, nextCheckAt } from "../council/machine";
import { absorbDialogs, DIRECT_PHASES } from "../council/machine-dialog";
import type { DialogBody, MachineContext, MachineInput, Refusal } from "../council/machine-types";
import { cryptoRandom } from "../council/random";
import { PROJECT_STARTED_GUARD } from "../council/effects";
import { COUNCIL_RULES } from "../council/rules";
import type { DialogRecord, SessionState } from "../council/session";
import {
  loadDialogs,
  loadDialogsAfter,
  loadMemberPool,
  loadSession,
  loadVotes,
  saveTransition,
  toDialogRecord,
  toVoteRecord,
  type StoredSession,
} from "../council/session-store";

const sessionId = z.string().regex(/^delib_[0-9a-f]{16}$/);
const base = { session_id: sessionId, now: z.number().int() };
const dialogInput = z.object({ ...base, node_id: z.string().min(1).max(64), body: z.record(z.string(), z.unknown()) });
const jobEndInput = z.object({
  ...base,
  end: z.object({
    job_id: z.string(),
    status: z.enum(["completed", "failed", "dead"]),
    result: z.record(z.string(), z.unknown()).optional(),
    error: z.object({ code: z.string(), message: z.string() }).optional(),
    reason: z.string().optional(),
  }),
});
const nudgeInput = z.object({ ...base, due: z.number().int() });
const vetoInput = z.object({ ...base, by: z.string().min(1).max(100), reason: z.string().min(1).max(2_000) });
const ratifyInput = z.object({ ...base, by: z.string().min(1).max(100) });

/** A loaded session with the dialogs written directly since its last save folded in (not saved yet). */
interface Folded {
  stored: StoredSession;
  state: SessionState;
  absorbed: number;
}

/** Saves that lose a race with a direct dialog or another save reload and run again, at most this often. */
const SAVE_ATTEMPTS = 5;

export type SessionOutcome =
  | { ok: true; phase: string; changed: boolean; dialog?: DialogRecord }
  | Refusal
  | { ok: false; code: "not_found"; detail: string }
  // A veto whose save found the session's project started (the guard aborted the batch).
  | { ok: false; code: "project_active"; detail: string };

/**
 * One deliberation's single writer. Every input (dialog, check, job end, veto) for a session runs
 * here one at a time (an in-memory queue: a Durable Object instance is unique, so nothing else
 * writes the session), through the pure state machine, and is saved to D1 in one batch guarded by
 * the row's version. The alarm runs the debounced progress check and the next deadline.
 *
 * Plain contributions (assess, challenge, agree, develop) are written by the Worker directly in one
 * guarded statement (council/direct-dialog.ts), which then `nudge`s this object's alarm. Before
 * running any input this object folds those rows into the state (council/machine-dialog.ts), and
 * every save is guarded on having seen them all.
 */
export class CouncilSession extends DurableObject<Env> {
  private cache: StoredSession | null = null;
  private tail: Promise<unknown> = Promise.resolve();
  private offsetMs = 0;
  /** The alarm last set (real ms, null: none), so a dialog that does not move it writes no storage. */
  private alarmAt: number | null | undefined = undefined;
  private sessionId: string | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec(`CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL)`);
  }

  /** Called once the session row exists: remember which session this is and set the first alarm. */
  async wake(input: { session_id: string; now: number }): Promise<void> {
    const req = z.object(base).parse(input);
    await this.serial(async () => {
      const stored = await this.load(req.session_id, req.now, true);
      if (stored) await this.schedule(stored.state);
    });
  }

  async dialog(input: { session_id: string; node_id: string; body: DialogBody; now: number }): Promise<SessionOutcome> {
    const req = dialogInput.parse(input);
    const body = req.body as unknown as DialogBody;
    return this.serial(async () => {
      const db = getDb(this.env.DB);
      const stored = await this.load(req.session_id, req.now);
      if (!stored) return notFound(req.session_id);
      // Only what this dialog needs, in one round trip: the electorate seat and a previous ballot
      // for a vote, the dialog replied to for a reply.
      const isVote = body.dialog_type === "vote";
      const [seat, voted, reply] = await Promise.all([
        isVote
          ? db
              .select()
              .from(councilElectorate)
              .where(and(eq(councilElectorate.sessionId, req.session_id), eq(councilElectorate.nodeId, req.node_id)))
              .all()
          : [],
        isVote
          ? db
              .select({ n: councilVotes.nodeId })
              .from(councilVotes)
              .where(and(eq(councilVotes.sessionId, req.session_id), eq(councilVotes.nodeId, req.node_id)))
              .all()
          : [],
        body.reply_to
          ? db
              .select({ id: councilDialogs.id })
              .from(councilDialogs)
              .where(and(eq(councilDialogs.sessionId, req.session_id), eq(councilDialogs.id, body.reply_to)))
              .all()
          : [],
      ]);
      const input: MachineInput = {
        kind: "dialog",
        node_id: req.node_id,
        body,
        voter: seat[0] ? { kind: seat[0].kind, weight: seat[0].weight } : null,
        already_voted: voted.length > 0,
        reply_to_exists: reply.length > 0,
      };
      try {
        const out = await this.apply(stored, input, req.now);
        if (!out.ok) return out;
        const dialog = out.effects.find((e) => e.kind === "record_dialog");
        return {
          ok: true,
          phase: out.state.phase,
          changed: true,
          ...(dialog && dialog.kind === "record_dialog" ? { dialog: dialog.dialog } : {}),
        };
      } catch (err) {
        // The primary key on (session, node) is the backstop of "one vote per node".
        if (isUniqueFailure(err, "council_votes"))
          return { ok: false, code: "already_voted", detail: "This node has already voted in this session" } as Refusal;
        throw err;
      }
    });
  }

  /** Deadlines and progress: the alarm, the minute tick and tests call this; nothing due → no write. */
  /**
   * A direct dialog asked for a progress check at `due` (clock ms): bring the alarm forward to it.
   * Writes nothing to D1; queued behind whatever runs now, so a check that did not see the dialog
   * cannot move the alarm back past it afterwards.
   */
  async nudge(input: { session_id: string; due: number; now: number }): Promise<void> {
    const req = nudgeInput.parse(input);
    await this.serial(async () => {
      this.offsetMs = req.now - Date.now();
      const at = Math.max(Date.now(), req.due - this.offsetMs);
      this.rememberSession(req.session_id);
      const current = this.alarmAt === undefined ? await this.ctx.storage.getAlarm() : this.alarmAt;
      if (current !== null && current <= at) return;
      this.alarmAt = at;
      await this.ctx.storage.setAlarm(at);
    });
  }

  async check(input: { session_id: string; now: number }): Promise<SessionOutcome> {
    const req = z.object(base).parse(input);
    return this.serial(async () => {
      const stored = await this.load(req.session_id, req.now);
      if (!stored) return notFound(req.session_id);
      return this.runCheck(stored, req.now);
    });
  }

  async jobEnded(input: z.input<typeof jobEndInput>): Promise<SessionOutcome> {
    const req = jobEndInput.parse(input);
    return this.serial(async () => {
      const stored = await this.load(req.session_id, req.now);
      if (!stored) return notFound(req.session_id);
      const db = getDb(this.env.DB);
      const [votes, dialogs] = await Promise.all([loadVotes(db, req.session_id), loadDialogs(db, req.session_id)]);
      const out = await this.apply(
        stored,
        { kind: "job_ended", ...req.end, votes: votes.map(toVoteRecord), dialogs: dialogs.map(toDialogRecord) },
        req.now,
      );
      return out.ok ? { ok: true, phase: out.state.phase, changed: out.changed } : out;
    });
  }

  async veto(input: z.input<typeof vetoInput>): Promise<SessionOutcome> {
    const req = vetoInput.parse(input);
    return this.admin(req, { kind: "veto", by: req.by, reason: req.reason });
  }

  async ratify(input: z.input<typeof ratifyInput>): Promise<SessionOutcome> {
    const req = ratifyInput.parse(input);
    return this.admin(req, { kind: "ratify", by: req.by });
  }

  override async alarm(): Promise<void> {
    this.alarmAt = undefined; // it fired: whatever comes next must be set again
    const id = this.ctx.storage.sql.exec<{ v: string }>(`SELECT v FROM meta WHERE k = 'session_id'`).toArray()[0]?.v;
    if (!id) return;
    const clock = await loadClock(this.env);
    await this.check({ session_id: id, now: clock.nowMs() });
  }

  // --- internals ---

  private admin(req: { session_id: string; now: number }, input: MachineInput): Promise<SessionOutcome> {
    return this.serial(async () => {
      const stored = await this.load(req.session_id, req.now);
      if (!stored) return notFound(req.session_id);
      const out = await this.apply(stored, input, req.now);
      return out.ok ? { ok: true, phase: out.state.phase, changed: out.changed } : out;
    });
  }

  private async runCheck(stored: StoredSession, now: number): Promise<SessionOutcome> {
    const db = getDb(this.env.DB);
    const cfg = await this.readConfig(db);
    const folded = await this.fold(stored, cfg);
    const next = nextCheckAt(folded.state);
    if (next === null || Date.parse(next) > now) {
      await this.schedule(folded.state);
      return { ok: true, phase: folded.state.phase, changed: false };
    }
    const needs = checkNeeds(folded.state, now, COUNCIL_RULES);
    const [pool, votes, dialogs] = await Promise.all([
      needs.pool ? loadMemberPool(db, new Date(now)) : undefined,
      needs.votes ? loadVotes(db, stored.state.session_id) : undefined,
      needs.dialogs ? loadDialogs(db, stored.state.session_id) : undefined,
    ]);
    const out = await this.apply(
      stored,
      { kind: "check", pool, votes: votes?.map(toVoteRecord), dialogs: dialogs?.map(toDialogRecord) },
      now,
      cfg,
      folded,
    );
    return out.ok ? { ok: true, phase: out.state.phase, changed: out.changed } : out;
  }

  /**
   * Runs the machine on the state with the direct dialogs folded in, and saves both in one batch.
   * A lost race (a direct dialog or, unexpectedly, another save got in first) reloads and runs again.
   */
  private async apply(stored: StoredSession, input: MachineInput, now: number, config?: CouncilConfig, first?: Folded) {
    const db = getDb(this.env.DB);
    const cfg = config ?? (await this.readConfig(db));
    const ctx: MachineContext = { now: new Date(now), rules: COUNCIL_RULES, config: cfg, random: cryptoRandom, newId };
    for (let attempt = 0; ; attempt++) {
      const current = attempt === 0 ? stored : await this.load(stored.state.session_id, now, true);
      if (!current) throw new Error(`session ${stored.state.session_id} disappeared`);
      const folded = attempt === 0 && first ? first : await this.fold(current, cfg);
      const out = advance(folded.state, input, ctx);
      if (!out.ok) return out;
      const changed = out.changed || folded.absorbed > 0;
      if (!changed) {
        await this.schedule(folded.state);
        return out;
      }
      try {
        await saveTransition(this.env, db, out.state, current.version, folded.state.dialog_count, out.effects, COUNCIL_RULES, ctx.now);
      } catch (err) {
        this.cache = null;
        if (isGuardFailure(err, "council_sessions.version") && attempt + 1 < SAVE_ATTEMPTS) continue;
        // Our own dialog's seq taken by a direct one that got in first: same race, run again.
        if (isUniqueFailure(err, "council_dialogs") && attempt + 1 < SAVE_ATTEMPTS) continue;
        // An answer, not an exception: thrown through RPC it would also be logged as uncaught here.
        if (isGuardFailure(err, PROJECT_STARTED_GUARD))
          return { ok: false as const, code: "project_active" as const, detail: "the session's project has started" };
        throw err;
      }
      this.cache = { state: out.state, version: current.version + 1 };
      await this.schedule(out.state);
      return { ...out, changed };
    }
  }

  /** The session with the dialogs written directly since its last save folded in (one D1 read, only in phases that take them). */
  private async fold(stored: StoredSession, cfg: CouncilConfig): Promise<Folded> {
    const none = { stored, state: stored.state, absorbed: 0 };
    if (!DIRECT_PHASES.includes(stored.state.phase)) return none;
    const rows = await loadDialogsAfter(getDb(this.env.DB), stored.state.session_id, stored.state.dialog_count);
    if (rows.length === 0) return none;
    const { state } = absorbDialogs(stored.state, rows.map(toDialogRecord), { rules: COUNCIL_RULES, config: cfg });
    return { stored, state, absorbed: rows.length };
  }

  /**
   * The effective council config (`model_work` resolved) through the isolate's short caches (a PUT
   * shows within CONFIG_CACHE_MS, at once in this isolate).
   */
  private readConfig(db: Db): Promise<CouncilConfig> {
    return readCouncilConfigCached(db, new Date(Date.now() + this.offsetMs));
  }

  private async load(id: string, now: number, fresh = false): Promise<StoredSession | null> {
    this.offsetMs = now - Date.now();
    if (!fresh && this.cache && this.cache.state.session_id === id) return this.cache;
    const stored = await loadSession(getDb(this.env.DB), id);
    if (stored) {
      this.cache = stored;
      this.rememberSession(id);
    }
    return stored;
  }

  /** Which session this object is, for the alarm (kept in its own storage; written once). */
  private rememberSession(id: string) {
    if (this.sessionId === id) return;
    this.ctx.storage.sql.exec(`INSERT INTO meta (k, v) VALUES ('session_id', ?) ON CONFLICT(k) DO UPDATE SET v = excluded.v`, id);
    this.sessionId = id;
  }

  /** One alarm at the next moment a check could change something, mapped from clock time to real time. */
  private async schedule(state: SessionState) {
    const next = nextCheckAt(state);
    const at = next === null ? null : Date.parse(next) - this.offsetMs;
    // The clock offset is measured per call, so the same deadline maps to a slightly different real
    // time each time: within a second counts as unchanged.
    const unchanged =
      at === null
        ? this.alarmAt === null
        : typeof this.alarmAt === "number" && Math.abs(at - this.alarmAt) < 1_000 && this.alarmAt > Date.now();
    if (unchanged) return;
    this.alarmAt = at;
    if (at === null) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(Math.max(Date.now(), at));
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.tail.then(fn, fn);
    this.tail = run.catch(() => undefined);
    return run;
  }
}

function notFound(id: string) {
  return { ok: false as const, code: "not_found" as const, detail: `session ${id} not found` };
}
