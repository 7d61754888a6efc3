import type { GoldVerdict } from "./case-schema";
import type { MatrixDesign, MatrixRole, MatrixVerdict, Runtime, VerdictReason } from "./design";
import type { CaseVerdict } from "./score";
import { achievedMde, meanWithSe, normalInterval, wilsonInterval, type SeSource } from "./stats";
import type { VerifierReply } from "./verifier-reply";

/**
 * One cell's statistics (seed 002 "何を計測するか"). A cell's unit is the case: its K repeats are first
 * averaged into the case's score (repeats of one prompt are correlated, so counting them as independent
 * draws would shrink the SE for free), n counts cases, and the mean, SE and interval are over case
 * scores clustered by domain. Executor: a case's score is its PASS rate over scored runs. Verifier: its
 * agreement with the gold over parseable replies; unparseable replies are counted and excluded from
 * every rate. A run or reply that yields nothing is not an observation, so a case can drop out.
 */
export interface ExecutorRun {
  role: "executor";
  domain: string;
  case_id: string;
  runtime: Runtime;
  model: string;
  /** scoreCase's verdict; `unscored` (missing evidence, a failed run) is not an observation. */
  verdict: CaseVerdict;
}

export interface VerifierRun {
  role: "verifier";
  domain: string;
  case_id: string;
  runtime: Runtime;
  model: string;
  /** The case transcript's gold verdict. */
  gold: GoldVerdict;
  reply: VerifierReply;
}

export type MatrixRun = ExecutorRun | VerifierRun;

export interface CaseObservation {
  domain: string;
  case_id: string;
  /** Mean over the case's usable runs, in [0, 1]. */
  score: number;
  usable_runs: number;
  /** Verifier observations only. */
  gold?: GoldVerdict;
}

/** A rate with its Wilson interval; rate and interval are absent when nothing was counted. */
export interface RateReport {
  k: number;
  n: number;
  rate?: number;
  wilson_low?: number;
  wilson_high?: number;
}

export interface VerifierTally {
  /** Cases by gold class, among the cases that contributed an observation. */
  gold_pass: number;
  gold_fail: number;
  unparseable: number;
  degenerate_gold: boolean;
  /** Over parseable replies (runs). */
  agreement: RateReport;
  /** Said PASS where gold is FAIL, over parseable replies on gold-FAIL cases. */
  false_accept: RateReport;
  /** Said FAIL where gold is PASS, over parseable replies on gold-PASS cases. */
  false_reject: RateReport;
}

export interface CellReport {
  domain: string;
  role: MatrixRole;
  runtime: Runtime;
  model: string;
  /** Cases with at least one usable run. */
  n: number;
  usable_runs: number;
  /** Executor runs without a verdict (verifier: see `verifier.unparseable`). */
  unscored_runs: number;
  n_clusters: number;
  mean?: number;
  se_clt?: number;
  se_clustered?: number;
  se_used?: number;
  se_source?: SeSource;
  ci_low?: number;
  ci_high?: number;
  achieved_mde?: number;
  degenerate_interval: boolean;
  verdict: MatrixVerdict;
  verdict_reason: VerdictReason;
  verifier?: VerifierTally;
}

type CellIdentity = Pick<CellReport, "domain" | "role" | "runtime" | "model">;

/** Case-level observations of one set of runs (K repeats averaged per case). */
export function caseObservations(runs: readonly MatrixRun[]): CaseObservation[] {
  const byCase = new Map<string, { domain: string; case_id: string; sum: number; usable: number; gold?: GoldVerdict }>();
  for (const run of runs) {
    const value = runValue(run);
    if (value === undefined) continue;
    const key = `${run.domain}\u0000${run.case_id}`;
    const entry = byCase.get(key) ?? { domain: run.domain, case_id: run.case_id, sum: 0, usable: 0 };
    entry.sum += value;
    entry.usable += 1;
    if (run.role === "verifier") entry.gold = run.gold;
    byCase.set(key, entry);
  }
  return [...byCase.values()].map((e) => ({
    domain: e.domain,
    case_id: e.case_id,
    score: e.sum / e.usable,
    usable_runs: e.usable,
    ...(e.gold ? { gold: e.gold } : {}),
  }));
}

function runValue(run: MatrixRun): number | undefined {
  if (run.role === "executor") return run.verdict === "unscored" ? undefined : run.verdict === "PASS" ? 1 : 0;
  return run.reply === "unparseable" ? undefined : run.reply === run.gold ? 1 : 0;
}

export interface IntervalStats {
  n: number;
  n_clusters: number;
  mean?: number;
  se_clt?: number;
  se_clustered?: number;
  se_used?: number;
  se_source?: SeSource;
  ci_low?: number;
  ci_high?: number;
  achieved_mde?: number;
  /** n = 1, or an interval of zero width (identical observations): unestimated spread, not precision. */
  degenerate_interval: boolean;
}

/** Mean, SE, interval (clipped to [lo, hi]) and achieved MDE of clustered values; absent keys where not computable. */
export function intervalStats(
  values: readonly { value: number; cluster: string }[],
  design: MatrixDesign,
  lo: number,
  hi: number,
): IntervalStats {
  const est = meanWithSe(values);
  if (!est) return { n: 0, n_clusters: 0, degenerate_interval: false };
  const out: IntervalStats = {
    n: est.n,
    n_clusters: est.n_clusters,
    mean: est.mean,
    degenerate_interval: est.se_used === undefined || est.se_used === 0,
  };
  if (est.se_clt !== undefined) out.se_clt = est.se_clt;
  if (est.se_clustered !== undefined) out.se_clustered = est.se_clustered;
  if (est.se_used !== undefined && est.se_source !== undefined) {
    const ci = normalInterval(est.mean, est.se_used, design.alpha, lo, hi);
    Object.assign(out, {
      se_used: est.se_used,
      se_source: est.se_source,
      ci_low: ci.low,
      ci_high: ci.high,
      achieved_mde: achievedMde(est.se_used, design.alpha, design.power),
    });
  }
  return out;
}

/** The verdict: the first reason that withholds a conclusion, else the side of the pass line. */
export function cellVerdict(
  s: IntervalStats,
  design: MatrixDesign,
  degenerateGold: boolean,
): { verdict: MatrixVerdict; verdict_reason: VerdictReason } {
  const unresolved = (verdict_reason: VerdictReason) => ({ verdict: "unresolved" as const, verdict_reason });
  if (s.n === 0) return unresolved("no_observations");
  if (degenerateGold) return unresolved("degenerate_gold");
  if (s.degenerate_interval || s.ci_low === undefined || s.ci_high === undefined || s.achieved_mde === undefined) {
    return unresolved("degenerate_interval");
  }
  if (s.achieved_mde > design.declared_mde) return unresolved("mde_not_resolved");
  if (s.ci_low > design.pass_line) return { verdict: "pass", verdict_reason: "above_pass_line" };
  if (s.ci_high < design.pass_line) return { verdict: "fail", verdict_reason: "below_pass_line" };
  return unresolved("straddles_pass_line");
}

/** A cell's report row from its runs (all of them for one (domain, role, runtime, model)). */
export function cellReport(id: CellIdentity, runs: readonly MatrixRun[], design: MatrixDesign): CellReport {
  const observations = caseObservations(runs);
  const stats = intervalStats(
    observations.map((o) => ({ value: o.score, cluster: o.domain })),
    design,
    0,
    1,
  );
  const verifier = id.role === "verifier" ? verifierTally(runs, observations, design) : undefined;
  const verdict = cellVerdict(stats, design, verifier?.degenerate_gold ?? false);
  return {
    ...id,
    usable_runs: observations.reduce((s, o) => s + o.usable_runs, 0),
    unscored_runs: runs.filter((r) => r.role === "executor" && r.verdict === "unscored").length,
    ...stats,
    ...verdict,
    ...(verifier ? { verifier } : {}),
  };
}

function verifierTally(runs: readonly MatrixRun[], observations: readonly CaseObservation[], design: MatrixDesign): VerifierTally {
  const replies = runs.filter((r): r is VerifierRun => r.role === "verifier");
  const parseable = replies.filter((r) => r.reply !== "unparseable");
  const onFail = parseable.filter((r) => r.gold === "FAIL");
  const onPass = parseable.filter((r) => r.gold === "PASS");
  const gold_pass = observations.filter((o) => o.gold === "PASS").length;
  const gold_fail = observations.filter((o) => o.gold === "FAIL").length;
  return {
    gold_pass,
    gold_fail,
    unparseable: replies.length - parseable.length,
    degenerate_gold: observations.length > 0 && (gold_pass === 0 || gold_fail === 0),
    agreement: rate(parseable.filter((r) => r.reply === r.gold).length, parseable.length, design.alpha),
    false_accept: rate(onFail.filter((r) => r.reply === "PASS").length, onFail.length, design.alpha),
    false_reject: rate(onPass.filter((r) => r.reply === "FAIL").length, onPass.length, design.alpha),
  };
}

function rate(k: number, n: number, alpha: number): RateReport {
  const ci = wilsonInterval(k, n, alpha);
  return ci ? { k, n, rate: k / n, wilson_low: ci.low, wilson_high: ci.high } : { k, n };
}

/** Groups runs into cells and reports each, sorted by (domain, role, runtime, model). */
export function cellReports(runs: readonly MatrixRun[], design: MatrixDesign): CellReport[] {
  const groups = new Map<string, { id: CellIdentity; runs: MatrixRun[] }>();
  for (const run of runs) {
    const key = [run.domain, run.role, run.runtime, run.model].join("\u0000");
    const g = groups.get(key) ?? { id: { domain: run.domain, role: run.role, runtime: run.runtime, model: run.model }, runs: [] };
    g.runs.push(run);
    groups.set(key, g);
  }
  return [...groups.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, g]) => cellReport(g.id, g.runs, design));
}
