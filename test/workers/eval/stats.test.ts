import { describe, expect, it } from "vitest";
import { achievedMde, mcnemarExact, meanWithSe, normalInterval, normalQuantile, wilsonInterval } from "../../../src/eval/stats";

const values = (cluster: string, ...vs: number[]) => vs.map((value) => ({ value, cluster }));

describe("normalQuantile", () => {
  it("returns the textbook critical values", () => {
    expect(normalQuantile(0.975)).toBeCloseTo(1.959963984540054, 12);
    expect(normalQuantile(0.8)).toBeCloseTo(0.8416212335729143, 12);
    expect(normalQuantile(0.999)).toBeCloseTo(3.090232306167813, 12);
    expect(normalQuantile(1e-10)).toBeCloseTo(-6.361340902404056, 10);
    expect(normalQuantile(0.5)).toBe(0);
  });

  it("refuses probabilities outside (0, 1)", () => {
    expect(() => normalQuantile(0)).toThrow(RangeError);
    expect(() => normalQuantile(1)).toThrow(RangeError);
  });
});

describe("wilsonInterval", () => {
  // 8/10 at α = 0.05: z² = 3.841459, center = (0.8 + 0.192073) / 1.384146 = 0.716736,
  // half = (1.959964 / 1.384146) · √(0.016 + 0.009604) = 0.226578 → [0.490158, 0.943314].
  it("matches the hand-computed interval for 8 of 10", () => {
    const ci = wilsonInterval(8, 10, 0.05)!;
    expect(ci.low).toBeCloseTo(0.490162, 5);
    expect(ci.high).toBeCloseTo(0.943318, 5);
  });

  // 0/10: center = half = 0.192073 / 1.384146 = 0.138767 → [0, 0.277533].
  it("stays inside [0, 1] at zero successes", () => {
    const ci = wilsonInterval(0, 10, 0.05)!;
    expect(ci.low).toBe(0);
    expect(ci.high).toBeCloseTo(0.277533, 5);
  });

  it("ends exactly at 1 when every trial succeeds", () => {
    expect(wilsonInterval(10, 10, 0.05)!.high).toBe(1);
  });

  it("is absent with no trials, never a made-up interval", () => {
    expect(wilsonInterval(0, 0, 0.05)).toBeUndefined();
  });

  it("refuses impossible counts", () => {
    expect(() => wilsonInterval(3, 2, 0.05)).toThrow(RangeError);
  });
});

describe("meanWithSe", () => {
  // Clusters A = [1, 0, 1], B = [0, 0], C = [1]: ȳ = 0.5; residual sums 0.5, −1, 0.5; Σ s² = 1.5;
  // V = G/(G−1) · 1.5 / n² = 1.5 · 1.5 / 36 = 0.0625 → SE 0.25. CLT: s² = 1.5 / 5 = 0.3, SE = √(0.3/6).
  it("computes the cluster-robust SE over three clusters", () => {
    const est = meanWithSe([...values("A", 1, 0, 1), ...values("B", 0, 0), ...values("C", 1)])!;
    expect(est.mean).toBe(0.5);
    expect(est.n_clusters).toBe(3);
    expect(est.se_clustered).toBeCloseTo(0.25, 12);
    expect(est.se_clt).toBeCloseTo(Math.sqrt(0.05), 12);
    expect(est.se_used).toBe(est.se_clustered);
    expect(est.se_source).toBe("cluster_robust");
  });

  // One cluster: the clustered SE is identically zero, so the CLT SE is used and says so.
  // [1, 0, 1, 0]: s² = 1 / 3, SE = √(1/12).
  it("falls back to the CLT SE with a single cluster and labels it", () => {
    const est = meanWithSe(values("only", 1, 0, 1, 0))!;
    expect(est.se_clustered).toBeUndefined();
    expect(est.se_clt).toBeCloseTo(Math.sqrt(1 / 12), 12);
    expect(est.se_used).toBe(est.se_clt);
    expect(est.se_source).toBe("clt_single_cluster");
  });

  it("reports no SE at all for n = 1", () => {
    const est = meanWithSe(values("only", 1))!;
    expect(est).toEqual({ n: 1, n_clusters: 1, mean: 1 });
  });

  it("reports a true zero SE for identical observations", () => {
    const est = meanWithSe([...values("A", 1, 1), ...values("B", 1)])!;
    expect(est.se_used).toBe(0);
    expect(est.se_clt).toBe(0);
  });

  it("is undefined for no observations", () => {
    expect(meanWithSe([])).toBeUndefined();
  });
});

describe("normalInterval and achievedMde", () => {
  it("clips the interval to its range", () => {
    expect(normalInterval(0.9, 0.1, 0.05, 0, 1)).toEqual({ low: 0.9 - 1.959963984540054 * 0.1, high: 1 });
  });

  it("gives MDE = (z_{1−α/2} + z_power) · SE: 2.8016 · SE at α = 0.05, power = 0.8", () => {
    expect(achievedMde(0.1, 0.05, 0.8)).toBeCloseTo(0.28015852, 7);
    expect(achievedMde(0.1, 0.01, 0.9)).toBeCloseTo((2.5758293035489 + 1.2815515655446) * 0.1, 10);
  });

  // Seed 002: "6 cases, K = 1 → tens of pp"; research 13 §4.2: "40 cases ≈ 21pp, 200 cases ≈ 9pp".
  // At the worst-case spread (half the cases pass) this formula gives 62.7pp, 22.4pp and 9.9pp.
  it("reproduces the seed's resolution scale", () => {
    const mdeAt = (n: number) => {
      const est = meanWithSe(values("d", ...Array.from({ length: n }, (_, i) => i % 2)))!;
      return achievedMde(est.se_used!, 0.05, 0.8);
    };
    expect(mdeAt(6)).toBeCloseTo(0.6265, 3);
    expect(mdeAt(40)).toBeCloseTo(0.21, 1);
    expect(mdeAt(40)).toBeCloseTo(0.2243, 3);
    expect(mdeAt(200)).toBeCloseTo(0.09, 1);
    expect(mdeAt(200)).toBeCloseTo(0.0993, 3);
  });
});

describe("mcnemarExact", () => {
  it("gives 2 · P(X ≤ 1 | 7, ½) = 2 · 8/128 = 0.125 for 6 against 1", () => {
    expect(mcnemarExact(6, 1)).toEqual({ strong_only: 6, weak_only: 1, discordant: 7, p_value: expect.closeTo(0.125, 12) });
  });

  it("gives 2 · (1 + 12 + 66) / 4096 for 10 against 2", () => {
    expect(mcnemarExact(10, 2).p_value).toBeCloseTo(158 / 4096, 12);
  });

  it("gives 2/32 for 0 against 5", () => {
    expect(mcnemarExact(0, 5).p_value).toBeCloseTo(0.0625, 12);
  });

  it("caps at 1 for a balanced split and for no discordant pair", () => {
    expect(mcnemarExact(5, 5).p_value).toBe(1);
    expect(mcnemarExact(0, 0)).toEqual({ strong_only: 0, weak_only: 0, discordant: 0, p_value: 1 });
  });

  it("stays finite for hundreds of pairs", () => {
    const p = mcnemarExact(300, 280).p_value;
    expect(p).toBeGreaterThan(0.42);
    expect(p).toBeLessThan(0.44);
  });
});
