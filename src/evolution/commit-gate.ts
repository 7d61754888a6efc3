import { sha256HexSync } from "../council/sha256";
import type { CaseVerdict, MeasureVector } from "./aee-measure";

/**
 * The champion and the commit gate (seed 003 §12.5.3 champion.rs, AVO P7 matches-or-improves). The
 * candidate is compared with the champion (the whole live playbook, never entry by entry, so a
 * candidate that improves one thing while quietly breaking three cannot look like progress) dimension
 * by dimension; a difference inside `[evolution.noise_band]` is a tie (Matches), and a tie commits too,
 * or evolution would sit in a local optimum. Three drift guards make ties safe: cumulative drift
 * detection (small losses committed as ties add up, and a sum beyond the band refuses), held-out
 * rotation (a rotating share of the cases is kept from the generator and must not regress either), and
 * the per-entry observation window (settle.ts).
 */
export interface NoiseBand {
  cases: number;
  judge: number;
}
export const DEFAULT_NOISE_BAND: NoiseBand = { cases: 0.05, judge: 0.15 };

export type DimVerdict = "improves" | "matches" | "regresses" | "unmeasured";

export interface DimComparison {
  verdict: DimVerdict;
  candidate: number | null;
  champion: number | null;
  /** candidate − champion (9 decimals); null when either side is unmeasured. */
  diff: number | null;
}

const r9 = (x: number) => Math.round(x * 1e9) / 1e9;

/** One dimension: |diff| ≤ band is a tie (boundary included); a side without a number leaves it unmeasured. */
export function compareDim(candidate: number | null, champion: number | null, band: number): DimComparison {
  if (candidate === null || champion === null) return { verdict: "unmeasured", candidate, champion, diff: null };
  const diff = r9(candidate - champion);
  const verdict: DimVerdict = diff > band ? "improves" : diff < -band ? "regresses" : "matches";
  return { verdict, candidate, champion, diff };
}

/** Pass rate over the cases scored (PASS or FAIL) on both sides and inside `keep`; null when there are none. */
export function pairedPassRates(
  candidate: Readonly<Record<string, CaseVerdict>>,
  champion: Readonly<Record<string, CaseVerdict>>,
  keep: (ref: string) => boolean,
): { candidate: number | null; champion: number | null; cases: number } {
  let n = 0;
  let a = 0;
  let b = 0;
  for (const [ref, v] of Object.entries(candidate)) {
    const w = champion[ref];
    if (!keep(ref) || v === "unscored" || w === undefined || w === "unscored") continue;
    n++;
    if (v === "PASS") a++;
    if (w === "PASS") b++;
  }
  return n === 0 ? { candidate: null, champion: null, cases: 0 } : { candidate: r9(a / n), champion: r9(b / n), cases: n };
}

/** Share of an agent's cases held out each round, and the rotation (a new draw every round). */
export const HELD_OUT_SHARE = 0.2;

/**
 * The cases held out in round `roundSeq`: the cases ranked by SHA-256 of `<round_seq>:<case_ref>`, the
 * first 20% (at least one once there are two cases; none with a single case, which cannot be held
 * out of its own round). Deterministic, and a different draw each round.
 */
export function heldOutCases(caseRefs: readonly string[], roundSeq: number, share = HELD_OUT_SHARE): string[] {
  const refs = [...new Set(caseRefs)];
  if (refs.length < 2) return [];
  const k = Math.min(refs.length - 1, Math.max(1, Math.round(refs.length * share)));
  return refs
    .map((ref) => ({ ref, key: sha256HexSync(`${roundSeq}:${ref}`) }))
    .sort((x, y) => (x.key < y.key ? -1 : x.key > y.key ? 1 : x.ref < y.ref ? -1 : 1))
    .slice(0, k)
    .map((x) => x.ref)
    .sort();
}

/** Losses committed as ties since the last improvement, per dimension (the cumulative drift guard). */
export interface DriftLedger {
  cases_loss: number;
  judge_loss: number;
}
export const EMPTY_LEDGER: DriftLedger = { cases_loss: 0, judge_loss: 0 };

export const COMMIT_REASONS = [
  "improves",
  "matches",
  "zeroed",
  "cases_unmeasured",
  "regressed_cases",
  "regressed_judge",
  "heldout_regressed",
  "cumulative_drift",
] as const;
export type CommitReason = (typeof COMMIT_REASONS)[number];

export interface CommitVerdict {
  commit: boolean;
  verdict: "improves" | "matches" | "rejected";
  reason: CommitReason;
  dims: { cases: DimComparison; judge: DimComparison; heldout: DimComparison };
  /** The ledger after this verdict (unchanged when rejected; reset by an improvement). */
  ledger: DriftLedger;
}

/**
 * In order: a zeroed candidate is refused; training cases unmeasured on either side refuse (fail
 * closed: nothing shows it does not regress); a training-case or judge regression beyond its band
 * refuses; a held-out regression refuses; a tie whose losses since the last improvement add up beyond
 * the band refuses (cumulative drift); then improves when any dimension improves, else matches. The
 * judge may be unmeasured (its call failed): it then neither blocks nor helps.
 */
export function commitVerdict(input: {
  candidate: MeasureVector;
  champion: MeasureVector;
  heldout: readonly string[];
  band?: NoiseBand;
  ledger?: DriftLedger;
}): CommitVerdict {
  const band = input.band ?? DEFAULT_NOISE_BAND;
  const ledger = input.ledger ?? EMPTY_LEDGER;
  const held = new Set(input.heldout);
  const train = pairedPassRates(input.candidate.cases.per_case, input.champion.cases.per_case, (r) => !held.has(r));
  const out = pairedPassRates(input.candidate.cases.per_case, input.champion.cases.per_case, (r) => held.has(r));
  const dims = {
    cases: compareDim(train.candidate, train.champion, band.cases),
    judge: compareDim(input.candidate.judge, input.champion.judge, band.judge),
    heldout: compareDim(out.candidate, out.champion, band.cases),
  };
  const reject = (reason: CommitReason): CommitVerdict => ({ commit: false, verdict: "rejected", reason, dims, ledger });
  if (input.candidate.zeroed) return reject("zeroed");
  if (dims.cases.verdict === "unmeasured") return reject("cases_unmeasured");
  if (dims.cases.verdict === "regresses") return reject("regressed_cases");
  if (dims.judge.verdict === "regresses") return reject("regressed_judge");
  if (dims.heldout.verdict === "regresses") return reject("heldout_regressed");
  const improves = [dims.cases, dims.judge, dims.heldout].some((d) => d.verdict === "improves");
  if (improves) return { commit: true, verdict: "improves", reason: "improves", dims, ledger: { ...EMPTY_LEDGER } };
  const next: DriftLedger = {
    cases_loss: r9(Math.max(0, ledger.cases_loss - (dims.cases.diff ?? 0))),
    judge_loss: r9(Math.max(0, ledger.judge_loss - (dims.judge.diff ?? 0))),
  };
  if (next.cases_loss > band.cases || next.judge_loss > band.judge) return reject("cumulative_drift");
  return { commit: true, verdict: "matches", reason: "matches", dims, ledger: next };
}
