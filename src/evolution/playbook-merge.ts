import * as z from "zod";
import { findNearDuplicate, dedupKey, type NearDuplicate } from "./dedup";
import {
  applicationSchema,
  assertionSchema,
  entryIdFor,
  evalCaseRef,
  failureNoteSchema,
  lineageSchema,
  MAX_APPLICATIONS,
  MAX_ASSERTIONS,
  MAX_CONTENT_CHARS,
  MAX_EVAL_CASES,
  MAX_FAILURE_NOTES,
  MAX_SIGNALS,
  PLAYBOOK_CATEGORIES,
  playbookEntrySchema,
  sortEntries,
  type Application,
  type EntryState,
  type FailureNote,
  type Playbook,
  type PlaybookEntry,
} from "./playbook";

/**
 * The deterministic delta merge (seed 003 §12.3 delta.rs): no model, a closed set of operations
 * (add / update / retire), validated before anything is written. Validation fails closed: a missing
 * field, content over 400 characters, an empty or unknown `eval_cases`, an unknown or retired target,
 * two operations on one entry, or a near duplicate refuses the whole delta with one reason token and
 * the input playbook is returned untouched. The merge returns a new playbook; it never mutates.
 */
export const MAX_DELTA_OPS = 8;

const content = z.string().trim().min(1);
const signals = z.array(z.string().trim().min(1).max(64)).max(MAX_SIGNALS);
const cases = z.array(evalCaseRef).max(MAX_EVAL_CASES);
const assertions = z.array(assertionSchema).max(MAX_ASSERTIONS);

export const addOpSchema = z.strictObject({
  op: z.literal("add"),
  category: z.enum(PLAYBOOK_CATEGORIES),
  signals_match: signals.default([]),
  content,
  eval_cases: cases,
  assertions: assertions.default([]),
  derived_from: z.array(lineageSchema).min(1).max(16),
});
export const updateOpSchema = z
  .strictObject({
    op: z.literal("update"),
    entry_id: z.string().min(1).max(64),
    category: z.enum(PLAYBOOK_CATEGORIES).optional(),
    signals_match: signals.optional(),
    content: content.optional(),
    eval_cases: cases.optional(),
    assertions: assertions.optional(),
    derived_from: z.array(lineageSchema).max(16).optional(),
  })
  .refine(
    (u) =>
      u.category !== undefined ||
      u.signals_match !== undefined ||
      u.content !== undefined ||
      u.eval_cases !== undefined ||
      u.assertions !== undefined,
    "an update must change at least one field",
  );
export const retireOpSchema = z.strictObject({
  op: z.literal("retire"),
  entry_id: z.string().min(1).max(64),
  reason: z.string().trim().min(1).max(200),
});
export const deltaOpSchema = z.union([addOpSchema, updateOpSchema, retireOpSchema]);
export const deltaSchema = z.strictObject({ ops: z.array(deltaOpSchema).min(1).max(MAX_DELTA_OPS) });
export type AddOp = z.infer<typeof addOpSchema>;

export const MERGE_REFUSALS = [
  "schema_invalid",
  "content_too_long",
  "eval_cases_empty",
  "eval_case_unknown",
  "unknown_entry",
  "entry_retired",
  "duplicate_target",
  "near_duplicate",
] as const;
export type MergeRefusal = (typeof MERGE_REFUSALS)[number];

export interface EntryChange {
  op: "add" | "update" | "retire";
  entry_id: string;
  /** The entry before the change (null for an add): what a per-entry rollback restores. */
  before: PlaybookEntry | null;
  after: PlaybookEntry;
}

export type MergeResult =
  | { ok: true; playbook: Playbook; changes: EntryChange[] }
  | {
      ok: false;
      reason: MergeRefusal;
      /** Index of the offending op, when one op is at fault. */
      index?: number;
      detail: string;
      /** For `near_duplicate`: the existing (or earlier new) entry it repeats, recorded, never dropped silently. */
      duplicate?: NearDuplicate;
    };

export interface MergeContext {
  now: Date;
  /** Whether an eval case reference names a case that exists (the loaded suites). Required: an unlinked entry is refused. */
  caseExists: (ref: string) => boolean;
}

const refuse = (reason: MergeRefusal, detail: string, index?: number, duplicate?: NearDuplicate): MergeResult => ({
  ok: false,
  reason,
  detail,
  ...(index !== undefined ? { index } : {}),
  ...(duplicate ? { duplicate } : {}),
});

/** Validates the whole delta against the playbook, then applies it in one step, or refuses it whole. */
export function applyDelta(pb: Playbook, rawDelta: unknown, ctx: MergeContext): MergeResult {
  const parsed = deltaSchema.safeParse(rawDelta);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const index = typeof issue.path[1] === "number" && issue.path[0] === "ops" ? issue.path[1] : undefined;
    return refuse("schema_invalid", `${issue.path.join(".") || "(delta)"}: ${issue.message}`, index);
  }
  const ops = parsed.data.ops;
  const byId = new Map(pb.entries.map((e) => [e.entry_id, e]));
  const targeted = new Set<string>();
  for (const [i, op] of ops.entries()) {
    if (op.op !== "add") {
      const target = byId.get(op.entry_id);
      if (!target) return refuse("unknown_entry", `no entry ${op.entry_id}`, i);
      if (target.state === "retired") return refuse("entry_retired", `entry ${op.entry_id} is retired`, i);
      if (targeted.has(op.entry_id)) return refuse("duplicate_target", `entry ${op.entry_id} is changed twice`, i);
      targeted.add(op.entry_id);
    }
    if (op.op === "retire") continue;
    if (op.content !== undefined && Array.from(op.content).length > MAX_CONTENT_CHARS)
      return refuse("content_too_long", `content is ${Array.from(op.content).length} characters (max ${MAX_CONTENT_CHARS})`, i);
    if (op.eval_cases !== undefined) {
      if (op.eval_cases.length === 0) return refuse("eval_cases_empty", "an entry must link at least one eval case", i);
      const unknown = op.eval_cases.find((c) => !ctx.caseExists(c));
      if (unknown !== undefined) return refuse("eval_case_unknown", `no eval case ${unknown}`, i);
    }
  }

  // Dedup: each new text against the entries that stay (not retired, not retired by this delta, not
  // the entry it replaces) and against the delta's earlier new texts.
  const retiring = new Set(ops.flatMap((op) => (op.op === "retire" ? [op.entry_id] : [])));
  const staying = pb.entries.filter((e) => e.state !== "retired" && !retiring.has(e.entry_id));
  const fresh: { entry_id: string; content: string }[] = [];
  for (const [i, op] of ops.entries()) {
    if (op.op === "retire" || op.content === undefined) continue;
    const self = op.op === "update" ? op.entry_id : `(op ${i})`;
    const others = [...staying.filter((e) => e.entry_id !== self), ...fresh];
    const dup = findNearDuplicate(op.content, others);
    if (dup) return refuse("near_duplicate", `repeats ${dup.entry_id} (cosine ${dup.similarity})`, i, dup);
    fresh.push({ entry_id: self, content: op.content });
  }

  const at = ctx.now.toISOString();
  const changes: EntryChange[] = [];
  for (const [i, op] of ops.entries()) {
    let after: PlaybookEntry;
    if (op.op === "add") {
      after = {
        entry_id: entryIdFor(pb.agent_id, ctx.now, dedupKey(op.content), i),
        agent_id: pb.agent_id,
        category: op.category,
        signals_match: op.signals_match,
        content: op.content,
        eval_cases: op.eval_cases,
        assertions: op.assertions,
        failure_history: [],
        applications: [],
        success_streak: 0,
        derived_from: op.derived_from,
        state: "probation",
        state_reason: "committed",
        state_since: at,
        created_at: at,
        updated_at: at,
        version: 1,
      };
      if (byId.has(after.entry_id)) return refuse("schema_invalid", `entry id ${after.entry_id} already exists`, i);
    } else {
      const before = byId.get(op.entry_id)!;
      after =
        op.op === "retire"
          ? withState(before, "retired", op.reason, ctx.now)
          : {
              ...withState(before, "probation", "updated", ctx.now),
              ...(op.category !== undefined ? { category: op.category } : {}),
              ...(op.signals_match !== undefined ? { signals_match: op.signals_match } : {}),
              ...(op.content !== undefined ? { content: op.content } : {}),
              ...(op.eval_cases !== undefined ? { eval_cases: op.eval_cases } : {}),
              ...(op.assertions !== undefined ? { assertions: op.assertions } : {}),
              derived_from: mergeLineage(before.derived_from, op.derived_from ?? []),
              success_streak: 0,
              version: before.version + 1,
            };
    }
    const valid = playbookEntrySchema.safeParse(after);
    if (!valid.success) {
      const issue = valid.error.issues[0]!;
      return refuse("schema_invalid", `${issue.path.join(".")}: ${issue.message}`, i);
    }
    changes.push({ op: op.op, entry_id: after.entry_id, before: op.op === "add" ? null : byId.get(after.entry_id)!, after: valid.data });
  }
  const changed = new Map(changes.map((c) => [c.entry_id, c.after]));
  const entries = [...pb.entries.filter((e) => !changed.has(e.entry_id)), ...changed.values()];
  return { ok: true, playbook: { agent_id: pb.agent_id, entries: sortEntries(entries) }, changes };
}

function mergeLineage(a: PlaybookEntry["derived_from"], b: PlaybookEntry["derived_from"]) {
  const seen = new Set<string>();
  const out = [];
  for (const l of [...a, ...b]) {
    const k = `${l.kind}:${l.id}`;
    if (seen.has(k)) continue;
    seen.add(k);
    out.push(l);
  }
  return out.slice(-16);
}

/** The entry moved to `state` (a state change restarts `state_since`; staying put keeps it). */
export function withState(e: PlaybookEntry, state: EntryState, reason: string, now: Date): PlaybookEntry {
  const at = now.toISOString();
  return { ...e, state, state_reason: reason.slice(0, 200), state_since: e.state === state ? e.state_since : at, updated_at: at };
}

/**
 * Failure notes appended to entries' `failure_history` (the newest kept), and nothing else changed, not
 * even `updated_at`: an abandoned round keeps its lessons this way and leaves every other byte as it
 * was (§12.5). Notes for entries that do not exist are returned unapplied, for the round's record.
 */
export function noteFailures(
  pb: Playbook,
  notes: readonly { entry_id: string; note: FailureNote }[],
): { playbook: Playbook; unapplied: { entry_id: string; note: FailureNote }[] } {
  const byEntry = new Map<string, FailureNote[]>();
  const unapplied: { entry_id: string; note: FailureNote }[] = [];
  const ids = new Set(pb.entries.map((e) => e.entry_id));
  for (const n of notes) {
    if (!ids.has(n.entry_id)) {
      unapplied.push(n);
      continue;
    }
    byEntry.set(n.entry_id, [...(byEntry.get(n.entry_id) ?? []), failureNoteSchema.parse(n.note)]);
  }
  const entries = pb.entries.map((e) => {
    const add = byEntry.get(e.entry_id);
    return add ? { ...e, failure_history: [...e.failure_history, ...add].slice(-MAX_FAILURE_NOTES) } : e;
  });
  return { playbook: { agent_id: pb.agent_id, entries }, unapplied };
}

/**
 * Applications recorded after turns that injected the entries: each success extends the entry's
 * `success_streak`, a failure ends it. The newest 50 applications are kept. An application for a
 * conversation the entry already holds one for is not recorded again (a repeated recording is a no-op).
 */
export function recordApplications(pb: Playbook, apps: readonly { entry_id: string; application: Application }[]): Playbook {
  const byEntry = new Map<string, Application[]>();
  for (const a of apps) byEntry.set(a.entry_id, [...(byEntry.get(a.entry_id) ?? []), applicationSchema.parse(a.application)]);
  const entries = pb.entries.map((e) => {
    const seen = new Set(e.applications.flatMap((a) => (a.conversation_id ? [a.conversation_id] : [])));
    const add = (byEntry.get(e.entry_id) ?? []).filter((a) => {
      if (a.conversation_id === undefined) return true;
      if (seen.has(a.conversation_id)) return false;
      seen.add(a.conversation_id);
      return true;
    });
    if (add.length === 0) return e;
    let streak = e.success_streak;
    for (const a of add) streak = a.outcome === "success" ? streak + 1 : 0;
    return { ...e, applications: [...e.applications, ...add].slice(-MAX_APPLICATIONS), success_streak: streak };
  });
  return { agent_id: pb.agent_id, entries };
}
