import { scanText } from "../council/scan";
import type { GateExclusionsInput, GateSignalsInput } from "./gate";

/**
 * The decomposability gate's inputs, measured from what the server knows about a goal (issue 39):
 * its frozen title and acceptance criteria, the conversation it was raised in, and the loop's round
 * budget. Pure: the caller reads the rows, this reads the text. A signal nothing measures stays
 * absent, so it does not hold (seed 002: the gate leans solo on purpose).
 *
 * - volume: the work items are the acceptance criteria that name a file path (an artifact). A
 *   criterion that names several artifacts, or that refers to the others ("index links both",
 *   "consistent with", "両方"), is a dependency hub: its items cannot be done apart. The independent
 *   items are the distinct artifacts that only single-artifact criteria name and no hub touches.
 * - context: the goal text's token estimate (a lower bound) against the executor's context window,
 *   only when a window is known; crewplane knows none today, so `fits_one_context` stays absent.
 * - long horizon (seed: ≥ 3 criteria and the task produces real artifacts): `produces_artifacts` is
 *   true when the title or a criterion names an output path, absent otherwise (a goal that names no
 *   path may still write files: unknown, not false).
 * - exclusions: a live channel turn (the goal names a live, open conversation whose reply is in
 *   flight), a plan-first approval pending (crewplane has no plan-first mode: never), an irreversible
 *   operation in the goal (the council scan's `destructive_operation` category), the rounds left.
 *
 * What a caller says (`signals`, `exclusions` in the request) are hints that can only keep the goal
 * solo: a hint lowers a measured signal or raises an exclusion, never the other way, and never fills
 * a signal nothing measured.
 */

/** The conversation the goal names, as the server stored it. */
export interface GoalConversation {
  source: "live" | "batch";
  status: "open" | "closed";
  /** The employee's reply to a turn is in flight (`conversations.pending_job_id`). */
  reply_pending: boolean;
}

export interface GoalFacts {
  title: string;
  acceptance_criteria: readonly string[];
  /** Null or absent: the goal names no conversation. */
  conversation?: GoalConversation | null;
  /** The goal loop's round budget. */
  rounds_left?: number;
  /** Other text that travels with every round (a SOUL, attached context), counted for the context signal. */
  context_texts?: readonly string[];
  /** The executor's context window in tokens, when the project knows it; absent: context stays unmeasured. */
  context_window_tokens?: number;
}

/** What the caller claimed (the request's `signals` and `exclusions`): hints that may only lean solo. */
export interface GateHints {
  signals?: GateSignalsInput;
  exclusions?: GateExclusionsInput;
}

export interface MeasuredHub {
  /** Index of the criterion in `acceptance_criteria`. */
  criterion: number;
  why: "names_several_artifacts" | "refers_to_other_items";
  artifacts: string[];
}

/** What the measurement saw, kept with the gate's decision so a person can see why. */
export interface GateMeasurementRecord {
  /** Paths the title and criteria name (at most `MAX_RECORDED` of them), and how many in all. */
  artifacts: string[];
  artifacts_total: number;
  /** The independent work items: one artifact each, with the criteria that name it. */
  items: { artifact: string; criteria: number[] }[];
  hubs: MeasuredHub[];
  context: { estimated_tokens: number; window_tokens: number | null };
  /** The irreversible operations the scan found (pattern ids), empty when none. */
  irreversible: string[];
  conversation: "none" | "live_reply_pending" | "live_idle" | "closed" | "batch";
  /** The gate inputs nothing measured (they do not hold). */
  unmeasured: ("independent_items" | "dependency_hubs" | "fits_one_context" | "produces_artifacts")[];
  /** The caller's hints that changed an input (each toward solo), and the ones that could not. */
  hints: { applied: string[]; ignored: string[] };
}

export interface GateMeasurement {
  signals: GateSignalsInput;
  exclusions: GateExclusionsInput;
  rounds_left?: number;
  record: GateMeasurementRecord;
}

/** At most this many artifacts, items and hubs are kept in the record (the counts stay exact). */
const MAX_RECORDED = 32;

// A file path: optional directories, then a name with a letter-led extension ("notes/a.md",
// "src/x.test.ts", "README.md"), or a directory written with its trailing slash ("out/"). Plain
// words with a slash ("and/or") and version numbers ("1.2.3") are not paths; nor is anything after
// "://" (a URL's host), because the match may not start right after a slash, a colon or a word character.
const PATH =
  /(?<![\w./:@-])(?:\.{0,2}\/)?(?:[A-Za-z0-9_][\w.-]*\/)*(?:[A-Za-z0-9_][\w-]*(?:\.[\w-]+)*\.[A-Za-z][A-Za-z0-9]{0,7}|[A-Za-z0-9_][\w.-]*\/)(?![\w/@-]|\.[A-Za-z0-9])/g;
// Abbreviations that look like a name with an extension.
const NOT_PATHS = new Set(["e.g", "i.e", "etc", "vs", "a.m", "p.m", "u.s"]);

// Words by which a criterion refers to the other items instead of standing alone. English, Japanese
// and Chinese, as the scan reads them; a hit leans solo, which is the direction the gate leans.
const REFERS_TO_OTHERS = new RegExp(
  [
    String.raw`\b(?:both|each other|one another|the others?|the rest|together|consistent(?:ly)?|consistency|links?|linked|linking|references?|referenced|refers? to|index(?:es)? (?:of|to|for)|based on|depends? on|derived from|built from|combin(?:e|es|ed|ing)|merg(?:e|es|ed|ing)|summar(?:y|ies|i[sz](?:e|es|ed|ing)) of|all (?:of )?(?:the|these|those|above)|every (?:one|other)|above)\b`,
    "両方|両者|互いに|他の|ほかの|残り|一貫|整合|リンク|参照|に基づ|をまとめ|すべての|全ての|上記",
    "两者|兩者|两个|兩個|互相|其他|其餘|其余|一致|链接|鏈接|引用|参考|參考|基于|基於|汇总|匯總|所有|上述",
  ].join("|"),
  "iu",
);

/** Paths a text names, normalised (a leading "./" dropped), in order of first mention. */
export function namedArtifacts(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(PATH)) {
    const path = m[0].replace(/^\.\//, "");
    if (NOT_PATHS.has(path.toLowerCase()) || out.includes(path)) continue;
    out.push(path);
  }
  return out;
}

/**
 * A lower-bound token estimate with no tokenizer: ASCII at 6 characters a token, any other code
 * point at 2 (real tokenizers give about 4 and 1–1.5). It under-counts on purpose, so "does not fit"
 * is only said of text that surely overflows the window.
 */
export function lowerBoundTokens(text: string): number {
  let ascii = 0;
  let other = 0;
  for (const ch of text) {
    if (ch.codePointAt(0)! < 0x80) ascii++;
    else other++;
  }
  return Math.floor(ascii / 6) + Math.floor(other / 2);
}

function measureVolume(criteria: readonly string[]) {
  const named = criteria.map(namedArtifacts);
  const hubs: MeasuredHub[] = [];
  named.forEach((artifacts, criterion) => {
    if (artifacts.length >= 2) hubs.push({ criterion, why: "names_several_artifacts", artifacts });
    else if (REFERS_TO_OTHERS.test(criteria[criterion]!)) hubs.push({ criterion, why: "refers_to_other_items", artifacts });
  });
  const inHub = new Set(hubs.flatMap((h) => h.artifacts));
  const hubCriteria = new Set(hubs.map((h) => h.criterion));
  const items = new Map<string, number[]>();
  named.forEach((artifacts, criterion) => {
    const only = artifacts[0];
    if (artifacts.length !== 1 || hubCriteria.has(criterion) || only === undefined || inHub.has(only)) return;
    items.set(only, [...(items.get(only) ?? []), criterion]);
  });
  return { items: [...items].map(([artifact, c]) => ({ artifact, criteria: c })), hubs };
}

function conversationState(c: GoalConversation | null | undefined): GateMeasurementRecord["conversation"] {
  if (!c) return "none";
  if (c.status === "closed") return "closed";
  if (c.source === "batch") return "batch";
  return c.reply_pending ? "live_reply_pending" : "live_idle";
}

/** Measures the gate's inputs from the goal, then applies the caller's hints (each may only lean solo). */
export function measureGate(facts: GoalFacts, hints: GateHints = {}): GateMeasurement {
  const { items, hubs } = measureVolume(facts.acceptance_criteria);
  const all = namedArtifacts([facts.title, ...facts.acceptance_criteria].join("\n"));
  const goalText = [facts.title, ...facts.acceptance_criteria, ...(facts.context_texts ?? [])].join("\n");
  const estimated = lowerBoundTokens(goalText);
  const window = facts.context_window_tokens;

  // The volume signal is measured whenever there are criteria to read: none is "no items", not unknown.
  const signals: GateSignalsInput = { independent_items: items.length, dependency_hubs: hubs.length };
  if (window !== undefined && window > 0) signals.fits_one_context = estimated <= window;
  if (all.length > 0) signals.produces_artifacts = true;

  const irreversible = scanText(facts.title, ...facts.acceptance_criteria).patterns.filter((p) => p === "destructive_operation");
  const conversation = conversationState(facts.conversation);
  const exclusions: GateExclusionsInput = {
    live_channel_turn: conversation === "live_reply_pending",
    // crewplane has no plan-first mode: no goal ever waits for a plan approval.
    plan_first_pending: false,
    irreversible_in_plan: irreversible.length > 0,
  };

  const applied: string[] = [];
  const ignored: string[] = [];
  const hint = (name: string, leansSolo: boolean) => (leansSolo ? applied : ignored).push(name);
  const h = hints.signals ?? {};
  if (h.independent_items !== undefined) {
    const lower = signals.independent_items !== undefined && h.independent_items < signals.independent_items;
    hint("signals.independent_items", lower);
    if (lower) signals.independent_items = h.independent_items;
  }
  if (h.dependency_hubs !== undefined) {
    const higher = signals.dependency_hubs !== undefined && h.dependency_hubs > signals.dependency_hubs;
    hint("signals.dependency_hubs", higher);
    if (higher) signals.dependency_hubs = h.dependency_hubs;
  }
  if (h.fits_one_context !== undefined) {
    const fits = h.fits_one_context && signals.fits_one_context === false;
    hint("signals.fits_one_context", fits);
    if (fits) signals.fits_one_context = true;
  }
  if (h.produces_artifacts !== undefined) {
    const none = !h.produces_artifacts && signals.produces_artifacts === true;
    hint("signals.produces_artifacts", none);
    if (none) signals.produces_artifacts = false;
  }
  for (const key of ["live_channel_turn", "plan_first_pending", "irreversible_in_plan"] as const) {
    const claimed = hints.exclusions?.[key];
    if (claimed === undefined) continue;
    const raises = claimed && exclusions[key] !== true;
    hint(`exclusions.${key}`, raises);
    if (raises) exclusions[key] = true;
  }

  const unmeasured = (["independent_items", "dependency_hubs", "fits_one_context", "produces_artifacts"] as const).filter(
    (k) => signals[k] === undefined,
  );
  return {
    signals,
    exclusions,
    ...(facts.rounds_left !== undefined ? { rounds_left: facts.rounds_left } : {}),
    record: {
      artifacts: all.slice(0, MAX_RECORDED),
      artifacts_total: all.length,
      items: items.slice(0, MAX_RECORDED),
      hubs: hubs.slice(0, MAX_RECORDED).map((hub) => ({ ...hub, artifacts: hub.artifacts.slice(0, MAX_RECORDED) })),
      context: { estimated_tokens: estimated, window_tokens: window !== undefined && window > 0 ? window : null },
      irreversible,
      conversation,
      unmeasured,
      hints: { applied, ignored },
    },
  };
}
