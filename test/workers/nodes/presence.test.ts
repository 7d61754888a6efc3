import { describe, expect, it } from "vitest";
import { memberIneligibility, isActive, type Candidate } from "../../../src/council/selection";
import { offerIneligibility } from "../../../src/projects/dispatch";
import { flushDeadline, planBeat, presenceShard, PRESENCE_SHARDS, PRESENCE_WINDOW_MS, windowLapsed } from "../../../src/nodes/presence";

const MIN = 60_000;
const HOUR = 60 * MIN;
const T0 = Date.parse("2026-12-01T00:00:00Z");

describe("planBeat", () => {
  it("writes D1 on a node's first heartbeat, on the first one of a new window, and after the clock went back", () => {
    const facts = (d1: number | null) => ({ d1LastBeatMs: d1, ackedThrough: 0, newestEventId: 0 });
    expect(planBeat(facts(null), undefined, T0).writeBeat).toBe(true);
    expect(planBeat(facts(T0), undefined, T0 + PRESENCE_WINDOW_MS - 1).writeBeat).toBe(false);
    expect(planBeat(facts(T0), undefined, T0 + PRESENCE_WINDOW_MS).writeBeat).toBe(true);
    expect(planBeat(facts(T0 + MIN), undefined, T0).writeBeat).toBe(true);
  });

  it("writes D1 when an ack moves the watermark, never for an ack at or behind it or past the newest event", () => {
    const facts = { d1LastBeatMs: T0, ackedThrough: 5, newestEventId: 9 };
    expect(planBeat(facts, 7, T0 + MIN)).toEqual({ writeBeat: false, moveAck: true });
    expect(planBeat(facts, 5, T0 + MIN).moveAck).toBe(false);
    expect(planBeat(facts, 3, T0 + MIN).moveAck).toBe(false);
    expect(planBeat({ ...facts, ackedThrough: 9 }, 1_000, T0 + MIN).moveAck).toBe(false);
    expect(planBeat(facts, undefined, T0 + MIN).moveAck).toBe(false);
  });

  it("holds a beat until the end of D1's window, or not at all when D1 never saw the node", () => {
    expect(flushDeadline(T0, T0 + 3 * MIN)).toBe(T0 + PRESENCE_WINDOW_MS);
    expect(flushDeadline(null, T0 + 3 * MIN)).toBe(T0 + 3 * MIN);
    expect(windowLapsed(null, T0)).toBe(true);
  });

  it("spreads node ids over every shard", () => {
    const counts = new Array(PRESENCE_SHARDS).fill(0);
    const ids = 100 * PRESENCE_SHARDS;
    for (let i = 0; i < ids; i++) counts[presenceShard(`node_${i.toString(16).padStart(16, "0")}`)]++;
    expect(Math.min(...counts)).toBeGreaterThan(50);
    expect(Math.max(...counts)).toBeLessThan(160);
    expect(presenceShard("node_0123456789abcdef")).toBe(presenceShard("node_0123456789abcdef"));
  });
});

/** A deterministic generator (mulberry32), so a failing schedule can be replayed. */
function rng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * One node under the two rules (the heartbeat writes D1 when its window lapsed, presence flushes by
 * the deadline), against the truth of every heartbeat written. Flushes run late by `lateMs` (an
 * alarm's delay), and an instant query compares D1's answer with the truth's.
 */
function simulate(seed: number, lateMs: number) {
  const random = rng(seed);
  const beats: number[] = [];
  let t = T0;
  // Bursts of heartbeats a minute apart (with jitter), then silences of up to 4 days.
  while (t < T0 + 20 * 24 * HOUR) {
    const burst = Math.floor(random() * 200);
    for (let i = 0; i < burst; i++) {
      beats.push(t);
      t += MIN + Math.floor((random() - 0.5) * 20_000);
    }
    t += Math.floor(random() * 96 * HOUR);
  }
  // D1's value over time as a list of (from, value) steps.
  const steps: { from: number; value: number }[] = [];
  let d1 = null as number | null;
  let held = null as { beat: number; due: number } | null;
  const flushIfDue = (until: number) => {
    if (held && held.due + lateMs <= until) {
      const at = held.due + lateMs;
      if (d1 === null || held.beat > d1) {
        d1 = held.beat;
        steps.push({ from: at, value: d1 });
      }
      held = null;
    }
  };
  for (const b of beats) {
    flushIfDue(b);
    const plan = planBeat({ d1LastBeatMs: d1, ackedThrough: 0, newestEventId: 0 }, undefined, b);
    if (plan.writeBeat) {
      d1 = b;
      steps.push({ from: b, value: b });
      held = null;
    } else {
      held = { beat: b, due: Math.min(held?.due ?? Infinity, flushDeadline(d1, b)) };
    }
  }
  flushIfDue(Infinity);
  // The latest value at or before q (both lists are in time order): a binary search.
  const lastAtOrBefore = <T>(list: T[], time: (x: T) => number, q: number): T | undefined => {
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (time(list[mid]!) <= q) lo = mid + 1;
      else hi = mid;
    }
    return lo === 0 ? undefined : list[lo - 1];
  };
  const d1At = (q: number) => lastAtOrBefore(steps, (s) => s.from, q)?.value ?? null;
  const truthAt = (q: number) => lastAtOrBefore(beats, (b) => b, q) ?? null;
  return { beats, steps, d1At, truthAt, random };
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const candidate = (beat: number | null): Candidate => ({
  node_id: "node_0000000000000001",
  reputation: 50,
  model_tier: 3,
  last_heartbeat_at: iso(beat),
  last_dialog_at: null,
  cooldown_until: null,
});
const offerConfig = { claim_min_reputation: 20, offer_min_tier: 1, offer_heartbeat_hours: 1, max_claims: 3 };

describe("presence keeps every heartbeat window exact", () => {
  it("answers the 48 h seat rule, the 72 h active rule and a 1 h offer window from D1 as from every heartbeat", () => {
    let checked = 0;
    const wrong: string[] = [];
    for (let seed = 1; seed <= 40; seed++) {
      const { beats, d1At, truthAt, random } = simulate(seed, 0);
      // Queries right at each window edge after a heartbeat (where a stale D1 would show) and at random.
      const queries = [
        ...beats.flatMap((b) => [b + 48 * HOUR - 1, b + 48 * HOUR, b + 48 * HOUR + 1, b + 72 * HOUR, b + HOUR, b + HOUR + 1]),
        ...Array.from({ length: 200 }, () => T0 + Math.floor(random() * 26 * 24 * HOUR)),
      ];
      const offer = (c: Candidate, q: number) =>
        offerIneligibility({ ...c, suspended_at: null, held: 0 }, [], q, offerConfig) === "no_recent_heartbeat";
      for (const q of queries) {
        const fromD1 = candidate(d1At(q));
        const truth = candidate(truthAt(q));
        if (
          memberIneligibility(fromD1, q) !== memberIneligibility(truth, q) ||
          isActive(fromD1, q) !== isActive(truth, q) ||
          offer(fromD1, q) !== offer(truth, q)
        )
          wrong.push(`seed ${seed} at ${iso(q)}: D1 ${fromD1.last_heartbeat_at}, truth ${truth.last_heartbeat_at}`);
        checked++;
      }
    }
    expect(wrong).toEqual([]);
    expect(checked).toBeGreaterThan(10_000);
  });

  it("writes D1 about once per window for a node heartbeating every minute, not once a minute", () => {
    const { beats, steps } = simulate(7, 0);
    expect(beats.length).toBeGreaterThan(1_000);
    expect(steps.length).toBeLessThan(beats.length / 4);
  });

  it("would be wrong only if a flush ran later than the 1 h window allows (so the slack is real)", () => {
    // A flush 55 minutes late breaks the 1 h offer window somewhere; 45 minutes late never does.
    const wrongAt = (late: number) => {
      for (let seed = 1; seed <= 40; seed++) {
        const { beats, d1At, truthAt } = simulate(seed, late);
        for (const b of beats) {
          for (const q of [b + HOUR, b + HOUR - 1]) {
            const near = (v: number | null) => v !== null && v <= q && q - v <= HOUR;
            if (near(d1At(q)) !== near(truthAt(q))) return true;
          }
        }
      }
      return false;
    };
    expect(wrongAt(45 * MIN)).toBe(false);
    expect(wrongAt(55 * MIN)).toBe(true);
  });
});
