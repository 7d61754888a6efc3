import { describe, expect, it } from "vitest";
import { decayAmount, grantedDelta, lastActiveAt, utcDay } from "../../../src/nodes/reputation";
import { reputationConfig } from "../../../src/nodes/reputation-config";

const DAY = 86_400_000;
const NOW = Date.parse("2026-12-20T12:00:00.000Z");
const ago = (days: number) => new Date(NOW - days * DAY).toISOString();

describe("grantedDelta", () => {
  it("grants a credit up to what is left of its source's daily cap", () => {
    expect(grantedDelta(10, 4, 8, 0)).toBe(4);
    expect(grantedDelta(14, 4, 8, 4)).toBe(4);
    expect(grantedDelta(18, 4, 8, 6)).toBe(2);
    expect(grantedDelta(18, 4, 8, 8)).toBe(0);
    expect(grantedDelta(18, 4, 8, 12)).toBe(0);
  });

  it("clamps to [0, 100] and never caps a penalty", () => {
    expect(grantedDelta(98, 4, 8, 0)).toBe(2);
    expect(grantedDelta(100, 4, 8, 0)).toBe(0);
    expect(grantedDelta(3, -5, null, 0)).toBe(-3);
    expect(grantedDelta(30, -5, 8, 100)).toBe(-5);
    expect(grantedDelta(30, 20, null, 100)).toBe(20);
  });
});

describe("decay", () => {
  const config = reputationConfig.schema.parse({});
  const facts = (over: Partial<Parameters<typeof decayAmount>[0]> = {}) => ({
    created_at: ago(60),
    last_heartbeat_at: null,
    last_dialog_at: null,
    last_credit_at: null,
    reputation: 30,
    ...over,
  });

  it("takes decay_per_day from a node inactive for decay_after_days, never below the initial value", () => {
    expect(config).toMatchObject({ decay_after_days: 14, decay_per_day: 1 });
    expect(decayAmount(facts(), NOW, config, 10)).toBe(-1);
    expect(decayAmount(facts({ reputation: 10.5 }), NOW, config, 10)).toBe(-0.5);
    expect(decayAmount(facts({ reputation: 10 }), NOW, config, 10)).toBe(0);
    expect(decayAmount(facts({ reputation: 4 }), NOW, config, 10)).toBe(0);
  });

  it("counts a heartbeat, a dialog, an earned credit or the registration as activity", () => {
    expect(decayAmount(facts({ last_heartbeat_at: ago(13.9) }), NOW, config, 10)).toBe(0);
    expect(decayAmount(facts({ last_dialog_at: ago(2) }), NOW, config, 10)).toBe(0);
    expect(decayAmount(facts({ last_credit_at: ago(1) }), NOW, config, 10)).toBe(0);
    expect(decayAmount(facts({ created_at: ago(3) }), NOW, config, 10)).toBe(0);
    expect(decayAmount(facts({ last_heartbeat_at: ago(14) }), NOW, config, 10)).toBe(-1);
    expect(lastActiveAt(facts({ last_heartbeat_at: ago(20), last_dialog_at: ago(16) }))).toBe(ago(16));
  });

  it("keys caps and decay by the UTC day", () => {
    expect(utcDay(new Date("2026-12-20T23:59:59.999Z"))).toBe("2026-12-20");
    expect(utcDay(new Date("2026-12-21T00:00:00.000Z"))).toBe("2026-12-21");
  });
});
