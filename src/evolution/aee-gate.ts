import { normalizeForScan } from "../council/normalize";
import { scanText } from "../council/scan";
import { mustAlwaysMissing, mustNotHits, secretHits, type Contract } from "./contract";
import type { NearDuplicate } from "./dedup";
import { applyDelta, MAX_DELTA_OPS, type EntryChange, type MergeContext } from "./playbook-merge";
import { isLive, MAX_CONTENT_CHARS, type Assertion, type Playbook, type PlaybookEntry } from "./playbook";
import { evalLeakOverlap, failureSuppressionHits, H1_LEAK_OVERLAP, isVacuous } from "./reward-hack";
import { capacityReport, PLAYBOOK_CAPACITY, type CapacityReport } from "./sweep";

/**
 * The AEE Gate (seed 003 §12.5.2 verifier_gate.rs): the deterministic, zero-cost checks that really
 * hold a veto, run before anything costs money (decision B2: a candidate that cannot pass never buys a
 * judge call). In order, the first refusal ending the run:
 *
 *   G-Safety        kill switch, human override, identity rewrite; the static security scan
 *   G-Contract      delta size, must_not, must_always, secrets; H1 eval leak (3-gram overlap ≥ 0.6),
 *                   H2 empty statement, H3 failure suppression (anti reward hacking, decision D11)
 *   G-Canary-Static literal canaries, or directives that would break them
 *   G-Schema        the playbook write validation: the delta merge, dry run (dedup included)
 *   G-Assertions    each new entry's E1 assertions replayed against recorded transcripts, zero LLM
 *
 * G-Capacity then reports the shadow playbook's capacity; it never refuses.
 */
export const GATE_ORDER = ["g_safety", "g_contract", "g_canary_static", "g_schema", "g_assertions"] as const;
export type GateCheck = (typeof GATE_ORDER)[number];

/** A recorded eval transcript of one linked case: the reply text, the tools used when recorded, its gold verdict. */
export interface RecordedTranscript {
  case_ref: string;
  gold: "PASS" | "FAIL";
  text: string;
  /** Tool names the recorded run used; absent when the recording did not observe tools. */
  tools_used?: readonly string[];
}

export interface GateContext extends MergeContext {
  playbook: Playbook;
  contract: Contract;
  /** The read-only persona (SOUL.md), for the must_always simulation; absent reads as empty. */
  persona?: string;
  /** An eval case's statement (prompt, acceptance criteria, expected texts) for H1; undefined when unknown. */
  caseText: (ref: string) => string | undefined;
  /** Canary strings planted in prompts (G-Canary-Static). */
  canaries?: readonly string[];
  transcripts: readonly RecordedTranscript[];
  capacity?: number;
}

export interface Advisory {
  check: GateCheck | "g_capacity";
  reason: string;
  detail: string;
}

export interface GateRefusal {
  pass: false;
  check: GateCheck;
  /** Stable reason token (`killswitch`, `h1_eval_leak`, `near_duplicate`, `assertion_violated`, …). */
  reason: string;
  detail: string;
  /** The checks that ran, in order; the last one refused. */
  ran: GateCheck[];
  advisories: Advisory[];
  /** For a G-Schema `near_duplicate`: the entry the candidate repeats (recorded, never dropped silently). */
  duplicate?: NearDuplicate;
}

export interface GatePass {
  pass: true;
  ran: GateCheck[];
  advisories: Advisory[];
  capacity: CapacityReport;
  /** The shadow playbook (the delta applied to a copy) and its changes: nothing is written here. */
  shadow: Playbook;
  changes: EntryChange[];
}

export type GateResult = GatePass | GateRefusal;

/** Texts of a candidate delta, read defensively (the delta may still be malformed: G-Schema judges that). */
interface CandidateTexts {
  /** New or changed entry contents, with their op index. */
  contents: { index: number; text: string }[];
  /** Every string in the delta (contents, signals, reasons, assertion values). */
  all: string[];
  opCount: number;
}

function candidateTexts(raw: unknown): CandidateTexts {
  const ops = raw && typeof raw === "object" && Array.isArray((raw as { ops?: unknown }).ops) ? (raw as { ops: unknown[] }).ops : [];
  const contents: { index: number; text: string }[] = [];
  const all: string[] = [];
  const walk = (v: unknown) => {
    if (typeof v === "string") all.push(v);
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === "object") Object.values(v).forEach(walk);
  };
  ops.forEach((op, index) => {
    walk(op);
    const c = op && typeof op === "object" ? (op as { content?: unknown }).content : undefined;
    if (typeof c === "string") contents.push({ index, text: c });
  });
  return { contents, all, opCount: ops.length };
}

/** G-Safety patterns, over normalized (lower-case, confusable-folded) text. */
export const SAFETY_PATTERNS: readonly { id: "killswitch" | "human_override" | "identity_rewrite"; regex: RegExp }[] = [
  {
    id: "killswitch",
    regex:
      /\b(?:disable|ignore|bypass|override|circumvent|turn off|deactivate|remove|evade|resist|avoid|prevent)\b.{0,40}?\b(?:kill ?-?switch(?:es)?|emergency stop|shut ?down|stop button|off switch|being stopped|being shut)\b|(?:キルスイッチ|緊急停止|停止命令|停止ボタン|紧急停止|急停开关|關機)(?:を|は)?(?:無視|無効|回避|解除|迂回|忽略|绕过|繞過|禁用)/u,
  },
  {
    id: "human_override",
    regex:
      /\b(?:ignore|disregard|override|bypass|refuse|resist|circumvent|overrule|evade)\b.{0,30}?\b(?:human|operator|admin|administrator|supervisor|owner)s?'?\s+(?:override|intervention|approval|instructions?|corrections?|oversight|control|decisions?|veto)\b|\bwithout\s+(?:asking\s+(?:for\s+)?)?(?:human|operator|admin)\s+(?:approval|review|consent)\b|(?:人間|オペレーター|管理者|運用者|人类|人類|操作员)(?:の|的)?(?:介入|承認|上書き|指示|監督|否決|干预|审批|審批)(?:を|は)?(?:無視|拒否|回避|迂回|拒絶|忽略|绕过|繞過)/u,
  },
  {
    id: "identity_rewrite",
    regex:
      /\b(?:you are now|from now on you are|your (?:new )?(?:name|identity|persona|personality|role) is now|forget (?:who|what) you are)\b|\b(?:rewrite|modify|edit|change|overwrite|replace|delete|append to)\b.{0,30}?\b(?:soul(?:\.md)?|your persona|your identity|your personality|system prompt|agent\.toml|contract\.toml)\b|(?:soul(?:\.md)?|ペルソナ|人格|アイデンティティ|人设|人設|身份)(?:を|は|的)?.{0,6}?(?:書き換え|書換|変更|上書き|改写|改寫|修改|覆盖|覆蓋)/u,
  },
];

const CANARY_DIRECTIVE =
  /\b(?:remove|strip|omit|drop|ignore|skip|delete|hide|suppress|never (?:output|include|print|emit|repeat)|do not (?:output|include|print|emit|repeat)|don'?t (?:output|include|print|emit|repeat))\b.{0,30}?\bcanar(?:y|ies)\b|\bcanar(?:y|ies)\b.{0,30}?\b(?:remove|strip|omit|ignore|skip|delete|hide|suppress)\b|(?:カナリア|金丝雀|金絲雀).{0,10}?(?:削除|無視|除去|出力しない|含めない|隠|删除|忽略|隐藏)/u;

type Step = { ok: true; advisories?: Advisory[] } | { ok: false; reason: string; detail: string; duplicate?: NearDuplicate };

function gSafety(t: CandidateTexts): Step {
  const text = t.all.join("\n");
  const normalized = normalizeForScan(text);
  for (const p of SAFETY_PATTERNS) if (p.regex.test(normalized)) return { ok: false, reason: p.id, detail: `matched ${p.id}` };
  const scan = scanText(text);
  if (!scan.clean) return { ok: false, reason: "security_scan", detail: scan.patterns.join(",") };
  return { ok: true };
}

function liveText(persona: string | undefined, entries: readonly PlaybookEntry[]): string {
  return [persona ?? "", ...entries.filter(isLive).map((e) => e.content)].join("\n\n");
}

function gContract(t: CandidateTexts, ctx: GateContext, shadow: Playbook | null, changes: EntryChange[]): Step {
  if (t.opCount > MAX_DELTA_OPS) return { ok: false, reason: "delta_too_large", detail: `${t.opCount} ops (max ${MAX_DELTA_OPS})` };
  for (const c of t.contents) {
    const n = Array.from(c.text.trim()).length;
    if (n > MAX_CONTENT_CHARS)
      return { ok: false, reason: "size_exceeded", detail: `op ${c.index}: ${n} characters (max ${MAX_CONTENT_CHARS})` };
  }
  for (const c of t.contents) {
    const hits = mustNotHits(c.text, ctx.contract);
    if (hits.length > 0) return { ok: false, reason: "must_not", detail: `op ${c.index}: ${hits.join(", ")}` };
  }
  const advisories: Advisory[] = [];
  if (shadow) {
    // The simulated final context (persona + live playbook) must keep every must_always phrase it had.
    const before = new Set(mustAlwaysMissing(liveText(ctx.persona, ctx.playbook.entries), ctx.contract));
    const after = mustAlwaysMissing(liveText(ctx.persona, shadow.entries), ctx.contract);
    const removed = after.filter((p) => !before.has(p));
    if (removed.length > 0) return { ok: false, reason: "must_always_removed", detail: removed.join(", ") };
    if (after.length > 0) advisories.push({ check: "g_contract", reason: "must_always_already_missing", detail: after.join(", ") });
  }
  const secrets = secretHits(t.all.join("\n"));
  if (secrets.length > 0) return { ok: false, reason: "secret", detail: secrets.join(",") };
  for (const c of t.contents) {
    // H1 against every case the candidate links (from the merge) or, before a valid merge, every case it names.
    const refs = changes.length > 0 ? [...new Set(changes.flatMap((ch) => ch.after.eval_cases))] : [];
    for (const ref of refs) {
      const caseText = ctx.caseText(ref);
      if (caseText === undefined) continue;
      const overlap = evalLeakOverlap(c.text, caseText);
      if (overlap !== null && overlap >= H1_LEAK_OVERLAP)
        return { ok: false, reason: "h1_eval_leak", detail: `op ${c.index} repeats ${ref} (3-gram overlap ${overlap})` };
    }
    if (isVacuous(c.text)) return { ok: false, reason: "h2_vacuous", detail: `op ${c.index} states nothing checkable` };
    const h3 = failureSuppressionHits(c.text);
    if (h3.length > 0) return { ok: false, reason: "h3_failure_suppression", detail: `op ${c.index}: ${h3.join(",")}` };
  }
  return { ok: true, advisories };
}

function gCanary(t: CandidateTexts, canaries: readonly string[]): Step {
  const text = t.all.join("\n");
  const lower = text.toLowerCase();
  const literal = canaries.find((c) => c.trim() !== "" && lower.includes(c.toLowerCase()));
  if (literal !== undefined) return { ok: false, reason: "canary_literal", detail: "the delta carries a canary string" };
  if (CANARY_DIRECTIVE.test(normalizeForScan(text)))
    return { ok: false, reason: "canary_directive", detail: "the delta tells the agent to drop a canary" };
  return { ok: true };
}

/** Whether a recorded reply satisfies one assertion; null when the recording cannot say (no tool record). */
export function replayAssertion(a: Assertion, t: RecordedTranscript): boolean | null {
  switch (a.kind) {
    case "output_contains":
      return t.text.toLowerCase().includes(a.value.toLowerCase());
    case "output_not_contains":
      return !t.text.toLowerCase().includes(a.value.toLowerCase());
    case "must_use_tools":
      return t.tools_used === undefined ? null : t.tools_used.includes(a.value);
    case "must_not_use_tools":
      return t.tools_used === undefined ? null : !t.tools_used.includes(a.value);
  }
}

/**
 * G-Assertions: every added entry carries E1 assertions; each changed entry's assertions are replayed
 * against the recorded transcripts of its linked cases whose gold is PASS (a known-good answer must
 * not break the entry's own assertions). No replayable recording: an advisory saying "unverified",
 * never a pass dressed as verified.
 */
function gAssertions(changes: EntryChange[], transcripts: readonly RecordedTranscript[]): Step {
  const advisories: Advisory[] = [];
  for (const ch of changes) {
    if (ch.op === "retire") continue;
    const e = ch.after;
    if (ch.op === "add" && e.assertions.length === 0) return { ok: false, reason: "assertions_missing", detail: `new entry ${e.entry_id}` };
    if (e.assertions.length === 0) continue;
    const linked = new Set(e.eval_cases);
    const recs = transcripts.filter((t) => t.gold === "PASS" && linked.has(t.case_ref));
    let verified = 0;
    let unverifiable = 0;
    for (const t of recs) {
      for (const a of e.assertions) {
        const ok = replayAssertion(a, t);
        if (ok === false)
          return {
            ok: false,
            reason: "assertion_violated",
            detail: `${e.entry_id}: ${a.kind} ${JSON.stringify(a.value)} on ${t.case_ref}`,
          };
        if (ok === true) verified++;
        else unverifiable++;
      }
    }
    if (recs.length === 0)
      advisories.push({ check: "g_assertions", reason: "assertions_unverified", detail: `${e.entry_id}: no recorded transcript` });
    else if (unverifiable > 0 || verified === 0)
      advisories.push({
        check: "g_assertions",
        reason: "assertions_partly_unverified",
        detail: `${e.entry_id}: ${unverifiable} not replayable`,
      });
  }
  return { ok: true, advisories };
}

/** Runs the Gate on a candidate delta; the first refusing check ends it. Pure: the playbook is not changed. */
export function runGate(rawDelta: unknown, ctx: GateContext): GateResult {
  const texts = candidateTexts(rawDelta);
  const merge = applyDelta(ctx.playbook, rawDelta, ctx);
  const shadow = merge.ok ? merge.playbook : null;
  const changes = merge.ok ? merge.changes : [];
  const ran: GateCheck[] = [];
  const advisories: Advisory[] = [];
  const steps: Record<GateCheck, () => Step> = {
    g_safety: () => gSafety(texts),
    g_contract: () => gContract(texts, ctx, shadow, changes),
    g_canary_static: () => gCanary(texts, ctx.canaries ?? []),
    g_schema: () =>
      merge.ok
        ? { ok: true }
        : {
            ok: false,
            reason: merge.reason,
            detail: merge.detail + (merge.index !== undefined ? ` (op ${merge.index})` : ""),
            ...(merge.duplicate ? { duplicate: merge.duplicate } : {}),
          },
    g_assertions: () => gAssertions(changes, ctx.transcripts),
  };
  for (const check of GATE_ORDER) {
    ran.push(check);
    const r = steps[check]();
    if (!r.ok)
      return {
        pass: false,
        check,
        reason: r.reason,
        detail: r.detail,
        ran,
        advisories,
        ...(r.duplicate ? { duplicate: r.duplicate } : {}),
      };
    if (r.advisories) advisories.push(...r.advisories);
  }
  const capacity = capacityReport(shadow!.entries, ctx.capacity ?? PLAYBOOK_CAPACITY);
  if (capacity.over > 0)
    advisories.push({ check: "g_capacity", reason: "over_capacity", detail: `${capacity.live} live of ${capacity.capacity}` });
  return { pass: true, ran, advisories, capacity, shadow: shadow!, changes };
}
