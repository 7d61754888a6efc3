/**
 * The statistics of the capability matrix (seed 002 "役割ごとのモデル選び (P2)"), pure and small.
 * Every function returns `undefined` for a statistic it cannot compute (n = 0, n = 1 for a spread):
 * unknown is not zero, and a caller writes an absent key, never a made-up number.
 */

/** Inverse of the standard normal CDF (Wichura's AS 241, PPND16; |error| < 1e-15). */
export function normalQuantile(p: number): number {
  if (!(p > 0 && p < 1)) throw new RangeError(`normalQuantile: p must be in (0, 1), got ${p}`);
  const q = p - 0.5;
  if (Math.abs(q) <= 0.425) {
    const r = 0.180625 - q * q;
    return (
      (q *
        (((((((r * 2509.0809287301226727 + 33430.575583588128105) * r + 67265.770927008700853) * r + 45921.953931549871457) * r +
          13731.693765509461125) *
          r +
          1971.5909503065514427) *
          r +
          133.14166789178437745) *
          r +
          3.387132872796366608)) /
      (((((((r * 5226.495278852545925 + 28729.085735721942674) * r + 39307.89580009271061) * r + 21213.794301586595867) * r +
        5394.1960214247511077) *
        r +
        687.1870074920579083) *
        r +
        42.313330701600911252) *
        r +
        1)
    );
  }
  let r = q < 0 ? p : 1 - p;
  r = Math.sqrt(-Math.log(r));
  let x: number;
  if (r <= 5) {
    r -= 1.6;
    x =
      (((((((r * 7.7454501427834140764e-4 + 0.0227238449892691845833) * r + 0.24178072517745061177) * r + 1.27045825245236838258) * r +
        3.64784832476320460504) *
        r +
        5.7694972214606914055) *
        r +
        4.6303378461565452959) *
        r +
        1.42343711074968357734) /
      (((((((r * 1.05075007164441684324e-9 + 5.475938084995344946e-4) * r + 0.0151986665636164571966) * r + 0.14810397642748007459) * r +
        0.68976733498510000455) *
        r +
        1.6763848301838038494) *
        r +
        2.05319162663775882187) *
        r +
        1);
  } else {
    r -= 5;
    x =
      (((((((r * 2.01033439929228813265e-7 + 2.71155556874348757815e-5) * r + 0.0012426609473880784386) * r + 0.026532189526576123093) * r +
        0.29656057182850489123) *
        r +
        1.7848265399172913358) *
        r +
        5.4637849111641143699) *
        r +
        6.6579046435011037772) /
      (((((((r * 2.04426310338993978564e-15 + 1.4215117583164458887e-7) * r + 1.8463183175100546818e-5) * r + 7.868691311456132591e-4) * r +
        0.0148753612908506148525) *
        r +
        0.13692988092273580531) *
        r +
        0.59983220655588793769) *
        r +
        1);
  }
  return q < 0 ? -x : x;
}

/** z_{1-α/2}: the two-sided critical value at significance α. */
export function zTwoSided(alpha: number): number {
  return normalQuantile(1 - alpha / 2);
}

export interface Interval {
  low: number;
  high: number;
}

/**
 * Wilson score interval for k successes in n trials at significance α; undefined when n = 0.
 * center = (p̂ + z²/2n) / (1 + z²/n), half = z/(1 + z²/n) · √(p̂(1−p̂)/n + z²/4n²).
 */
export function wilsonInterval(k: number, n: number, alpha: number): Interval | undefined {
  if (!Number.isInteger(k) || !Number.isInteger(n) || k < 0 || k > n) throw new RangeError(`wilsonInterval: bad counts ${k}/${n}`);
  if (n === 0) return undefined;
  const z = zTwoSided(alpha);
  const p = k / n;
  const z2n = (z * z) / n;
  const center = (p + z2n / 2) / (1 + z2n);
  const half = (z / (1 + z2n)) * Math.sqrt((p * (1 - p)) / n + (z * z) / (4 * n * n));
  // At k = 0 (k = n) the bound is exactly 0 (1); say so rather than leave a rounding residue.
  return { low: k === 0 ? 0 : Math.max(0, center - half), high: k === n ? 1 : Math.min(1, center + half) };
}

export interface ClusteredValue {
  value: number;
  /** The cluster the observation belongs to (the suite directory / domain). */
  cluster: string;
}

export type SeSource = "cluster_robust" | "clt_single_cluster";

export interface MeanEstimate {
  n: number;
  n_clusters: number;
  mean: number;
  /** Plain CLT SE, s/√n with the n−1 sample variance; absent for n = 1. */
  se_clt?: number;
  /** CR1 cluster-robust SE; absent with fewer than two clusters (it is identically zero there). */
  se_clustered?: number;
  /** The SE the interval uses: clustered with ≥ 2 clusters, else the CLT SE (seed: clt_single_cluster). */
  se_used?: number;
  se_source?: SeSource;
}

/**
 * Mean with its standard errors. With G ≥ 2 clusters the SE is the CR1 cluster-robust SE of a mean,
 * √( G/(G−1) · Σ_g (Σ_{i∈g} (y_i − ȳ))² ) / n (Miller 2024 App. C; the G/(G−1) factor is Stata's
 * small-sample correction for a one-parameter model). With one cluster that sum is zero by construction,
 * so the plain CLT SE is used and labelled `clt_single_cluster` (seed 002, smoke 3). Undefined for n = 0.
 */
export function meanWithSe(observations: readonly ClusteredValue[]): MeanEstimate | undefined {
  const n = observations.length;
  if (n === 0) return undefined;
  const mean = observations.reduce((s, o) => s + o.value, 0) / n;
  const residualSums = new Map<string, number>();
  for (const o of observations) residualSums.set(o.cluster, (residualSums.get(o.cluster) ?? 0) + (o.value - mean));
  const g = residualSums.size;
  const estimate: MeanEstimate = { n, n_clusters: g, mean };
  if (n >= 2) {
    const ss = observations.reduce((s, o) => s + (o.value - mean) ** 2, 0);
    estimate.se_clt = Math.sqrt(ss / (n - 1) / n);
  }
  if (g >= 2) {
    let meat = 0;
    for (const s of residualSums.values()) meat += s * s;
    estimate.se_clustered = Math.sqrt((g / (g - 1)) * meat) / n;
    estimate.se_used = estimate.se_clustered;
    estimate.se_source = "cluster_robust";
  } else if (estimate.se_clt !== undefined) {
    estimate.se_used = estimate.se_clt;
    estimate.se_source = "clt_single_cluster";
  }
  return estimate;
}

/** mean ± z_{1−α/2}·se, clipped to [lo, hi] (a pass rate cannot leave [0, 1], a Δ cannot leave [−1, 1]). */
export function normalInterval(mean: number, se: number, alpha: number, lo: number, hi: number): Interval {
  const half = zTwoSided(alpha) * se;
  return { low: Math.max(lo, mean - half), high: Math.min(hi, mean + half) };
}

/**
 * The minimum detectable effect a cell actually achieves: MDE = (z_{1−α/2} + z_{power}) · SE, the
 * smallest true difference from its mean that a two-sided test at α detects with the given power when
 * the estimate's standard error is SE (Miller 2024 §3, one-sample form). α = 0.05, power = 0.8 gives
 * the familiar 2.80·SE.
 */
export function achievedMde(se: number, alpha: number, power: number): number {
  return (zTwoSided(alpha) + normalQuantile(power)) * se;
}

export interface McNemarResult {
  /** Pairs where only the strong arm passed. */
  strong_only: number;
  /** Pairs where only the weak arm passed. */
  weak_only: number;
  discordant: number;
  /** Exact two-sided p: 2 · P(X ≤ min(b, c)) for X ~ Binomial(b + c, ½), capped at 1 (1 with no discordant pair). */
  p_value: number;
}

/** McNemar's exact test on the discordant pairs of a paired binary comparison. */
export function mcnemarExact(strongOnly: number, weakOnly: number): McNemarResult {
  if (![strongOnly, weakOnly].every((v) => Number.isInteger(v) && v >= 0))
    throw new RangeError("mcnemarExact: counts must be integers ≥ 0");
  const nd = strongOnly + weakOnly;
  const m = Math.min(strongOnly, weakOnly);
  // Σ_{i≤m} C(nd, i) / 2^nd in log space, so hundreds of pairs neither overflow nor underflow.
  let logC = 0;
  let tail = 0;
  for (let i = 0; i <= m; i++) {
    tail += Math.exp(logC - nd * Math.LN2);
    logC += Math.log(nd - i) - Math.log(i + 1);
  }
  return { strong_only: strongOnly, weak_only: weakOnly, discordant: nd, p_value: Math.min(1, 2 * tail) };
}
