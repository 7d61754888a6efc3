import * as z from "zod";
import { sha256HexSync } from "../council/sha256";
import { SLUG } from "../eval/case-schema";
import { charLength } from "../prediction";
import { dedupKey } from "./dedup";

/**
 * Playbook entries (seed 003 §12.3): the AEE path's landing place, one compact rule per entry in the
 * GEP "gene" shape. The gene fields are the seed's; `agent_id`, the timestamps, `version`,
 * `state_reason` and `assertions` (the E1 assertions G-Assertions replays, §12.5.2) are this
 * codebase's bookkeeping around them. Entries are never hard-deleted: `retired` is the archive.
 */
export const PLAYBOOK_CATEGORIES = ["repair", "optimize", "innovate"] as const;

export const ENTRY_STATES = ["probation", "active", "stale", "retired"] as const;
export type EntryState = (typeof ENTRY_STATES)[number];

/** States whose entries make up the live playbook: injected into turns, hashed into the champion. */
export const LIVE_STATES: readonly EntryState[] = ["probation", "active"];

/** Content limit in characters (code points): compact rules work better than documents (arXiv:2604.15097). */
export const MAX_CONTENT_CHARS = 400;
export const MAX_EVAL_CASES = 32;
export const MAX_SIGNALS = 16;
/** E1 assertions: at most 6, each at most 80 characters (§12.5.2 G-Assertions). */
export const MAX_ASSERTIONS = 6;
export const MAX_ASSERTION_CHARS = 80;
/** Kept histories: the most recent notes and applications (older ones fall off the front). */
export const MAX_FAILURE_NOTES = 20;
export const MAX_APPLICATIONS = 50;

/**
 * The signal vocabulary (§12.3 signals.rs): what the prediction engine and the mistake notes can say
 * about a turn. A `signals_match` item is either one of these tokens or a keyword pattern in the GEP
 * form `a|b|c` (alternatives), matched against the turn's text (see selection.ts).
 */
export const SIGNAL_VOCABULARY = [
  "significant_error",
  "critical_error",
  "correction",
  "follow_up",
  "topic_surprise",
  "low_satisfaction",
  "negative_feedback",
  "contract_violation",
  "tool_misuse",
  "wrong_format",
  "language_mismatch",
  "incomplete_answer",
  "hallucination",
  "too_verbose",
  "too_terse",
] as const;
export type SignalToken = (typeof SIGNAL_VOCABULARY)[number];

/** An eval case reference `<domain>/<case_id>` (the suite directory and the case file stem). */
export const evalCaseRef = z
  .string()
  .max(129)
  .refine((s) => {
    const [domain, id, extra] = s.split("/");
    return extra === undefined && domain !== undefined && id !== undefined && SLUG.test(domain) && SLUG.test(id);
  }, "must be <domain>/<case_id> (lower-case slugs)");

const isoTime = z.iso.datetime({ offset: true });

const contentText = z
  .string()
  .trim()
  .min(1)
  .refine((s) => charLength(s) <= MAX_CONTENT_CHARS, `must be at most ${MAX_CONTENT_CHARS} characters`);

const signal = z
  .string()
  .trim()
  .min(1)
  .max(64)
  .regex(/^[^\r\n]+$/, "must be one line");

export const ASSERTION_KINDS = ["must_use_tools", "must_not_use_tools", "output_contains", "output_not_contains"] as const;

export const assertionSchema = z.strictObject({
  kind: z.enum(ASSERTION_KINDS),
  value: z
    .string()
    .trim()
    .min(1)
    .refine((s) => charLength(s) <= MAX_ASSERTION_CHARS, `must be at most ${MAX_ASSERTION_CHARS} characters`),
});
export type Assertion = z.infer<typeof assertionSchema>;

export const LINEAGE_KINDS = ["mistake", "gvu_proposal", "aee_round", "operator", "entry", "soul_migration"] as const;
export const lineageSchema = z.strictObject({ kind: z.enum(LINEAGE_KINDS), id: z.string().min(1).max(128) });

export const failureNoteSchema = z.strictObject({
  at: isoTime,
  round_id: z.string().min(1).max(128).optional(),
  /** A stable reason token (`gate:g_contract:h1_eval_leak`, `settle_rollback`, …). */
  reason: z.string().min(1).max(128),
  detail: z.string().max(MAX_CONTENT_CHARS).default(""),
});
export type FailureNote = z.infer<typeof failureNoteSchema>;

/** One application of the entry in a turn, in the GEP capsule spirit: its outcome and, when judged, a score. */
export const applicationSchema = z.strictObject({
  at: isoTime,
  outcome: z.enum(["success", "failed"]),
  score: z.number().min(0).max(1).optional(),
  conversation_id: z.string().min(1).max(128).optional(),
});
export type Application = z.infer<typeof applicationSchema>;

export const playbookEntrySchema = z.strictObject({
  entry_id: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[A-Za-z0-9_-]+$/),
  agent_id: z.string().min(1).max(128),
  category: z.enum(PLAYBOOK_CATEGORIES),
  signals_match: z.array(signal).max(MAX_SIGNALS),
  content: contentText,
  eval_cases: z.array(evalCaseRef).min(1, "an entry must link at least one eval case").max(MAX_EVAL_CASES),
  assertions: z.array(assertionSchema).max(MAX_ASSERTIONS),
  failure_history: z.array(failureNoteSchema).max(MAX_FAILURE_NOTES),
  applications: z.array(applicationSchema).max(MAX_APPLICATIONS),
  success_streak: z.int().min(0),
  derived_from: z.array(lineageSchema).min(1).max(16),
  state: z.enum(ENTRY_STATES),
  /** Why the entry is in its state (`settle_accept`, `unused`, `capacity`, an operator's retire reason…). */
  state_reason: z.string().min(1).max(200).nullable(),
  state_since: isoTime,
  created_at: isoTime,
  updated_at: isoTime,
  /** 1 at creation; +1 each time its content, signals, cases or assertions change. */
  version: z.int().min(1),
});
export type PlaybookEntry = z.infer<typeof playbookEntrySchema>;

/** An agent's playbook: all its entries, every state, sorted by `entry_id` (the canonical order). */
export interface Playbook {
  agent_id: string;
  entries: readonly PlaybookEntry[];
}

export function sortEntries(entries: readonly PlaybookEntry[]): PlaybookEntry[] {
  return [...entries].sort((a, b) => (a.entry_id < b.entry_id ? -1 : a.entry_id > b.entry_id ? 1 : 0));
}

export function isLive(e: Pick<PlaybookEntry, "state">): boolean {
  return LIVE_STATES.includes(e.state);
}

/** Helpful minus harmful among the kept applications (ACE's net score). */
export function netScore(e: Pick<PlaybookEntry, "applications">): number {
  let n = 0;
  for (const a of e.applications) n += a.outcome === "success" ? 1 : -1;
  return n;
}

/** When the entry last did anything: its last application, else its last state change. */
export function lastUsedAt(e: Pick<PlaybookEntry, "applications" | "state_since">): string {
  let last = e.state_since;
  for (const a of e.applications) if (Date.parse(a.at) > Date.parse(last)) last = a.at;
  return last;
}

const ENTRY_KEYS = [
  "entry_id",
  "agent_id",
  "category",
  "signals_match",
  "content",
  "eval_cases",
  "assertions",
  "failure_history",
  "applications",
  "success_streak",
  "derived_from",
  "state",
  "state_reason",
  "state_since",
  "created_at",
  "updated_at",
  "version",
] as const satisfies readonly (keyof PlaybookEntry)[];

function canonicalValue(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonicalValue);
  if (v && typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) {
      const x = (v as Record<string, unknown>)[k];
      if (x !== undefined) out[k] = canonicalValue(x);
    }
    return out;
  }
  return v;
}

/**
 * The playbook's canonical bytes: entries in id order, keys in a fixed order, nested objects with
 * sorted keys. Two playbooks with one canonical text are the same playbook; `except_failure_history`
 * blanks the one field an abandoned round may change (§12.5), which is how that promise is checked.
 */
export function canonicalPlaybook(pb: Playbook, opts: { except_failure_history?: boolean } = {}): string {
  const entries = sortEntries(pb.entries).map((e) => {
    const out: Record<string, unknown> = {};
    for (const k of ENTRY_KEYS) out[k] = k === "failure_history" && opts.except_failure_history ? [] : canonicalValue(e[k]);
    return out;
  });
  return JSON.stringify({ agent_id: pb.agent_id, entries });
}

/**
 * The champion fingerprint (§12.5.3): SHA-256 (hex) of the sorted dedup keys of every active and
 * probation entry, one per line. It names the whole live playbook, not any single entry.
 */
export function championFingerprint(entries: readonly Pick<PlaybookEntry, "state" | "content">[]): string {
  const keys = entries
    .filter(isLive)
    .map((e) => dedupKey(e.content))
    .sort();
  return sha256HexSync(keys.join("\n"));
}

/** A new entry's id: deterministic from the agent, the time, the content's key and its place in the delta. */
export function entryIdFor(agentId: string, now: Date, key: string, index: number): string {
  return `pbe_${sha256HexSync(`${agentId}\n${now.toISOString()}\n${index}\n${key}`).slice(0, 24)}`;
}
