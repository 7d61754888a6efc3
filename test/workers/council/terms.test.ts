import { describe, expect, it } from "vitest";
import { DAY, HOUR } from "../../../src/council/rules";
import { efficiency, reelect, stagnating, termCheck, type TermFacts, type TermMemberFacts } from "../../../src/council/terms";

const START = Date.parse("2026-12-01T00:00:00.000Z");
const at = (ms: number) => new Date(ms).toISOString();

function term(over: Partial<TermFacts> = {}): TermFacts {
  return {
    started_at: at(START),
    ends_at: at(START + 7 * DAY),
    session_count: 1,
    last_session_at: at(START + HOUR),
    efficiency_samples: [],
    ...over,
  };
}
function member(i: number, over: Partial<TermMemberFacts> = {}): TermMemberFacts {
  return {
    node_id: `n${i}`,
    requests: 4,
    responses: 4,
    last_heartbeat_at: at(START + 2 * HOUR),
    webhook_verified: true,
    reputation: 50,
    ...over,
  };
}
const five = (over: Partial<TermMemberFacts> = {}) => Array.from({ length: 5 }, (_, i) => member(i, over));

describe("termCheck", () => {
  const healthyNow = START + 3 * HOUR;

  it("finds nothing wrong with a healthy young term", () => {
    expect(termCheck(term(), five(), healthyNow)).toEqual([]);
  });

  it("dissolves at expiry (7 days) and at the session cap (10)", () => {
    expect(termCheck(term(), five(), START + 7 * DAY)).toContain("term_expired");
    expect(termCheck(term(), five(), START + 7 * DAY - 1)).not.toContain("term_expired");
    expect(termCheck(term({ session_count: 10 }), five(), healthyNow)).toEqual(["session_cap"]);
    expect(termCheck(term({ session_count: 9 }), five(), healthyNow)).toEqual([]);
  });

  it("dissolves when a majority answers under half of its requests, counting only members asked at least twice", () => {
    const members = [member(0, { responses: 1 }), member(1, { responses: 1 }), member(2, { responses: 1 }), member(3), member(4)];
    expect(termCheck(term(), members, healthyNow)).toEqual(["majority_low_response"]);
    const notYet = [
      member(0, { requests: 1, responses: 0 }),
      member(1, { requests: 1, responses: 0 }),
      member(2, { requests: 1, responses: 0 }),
      member(3),
      member(4),
    ];
    expect(termCheck(term(), notYet, healthyNow)).toEqual([]);
    const twoOfFive = [member(0, { responses: 1 }), member(1, { responses: 1 }), member(2), member(3), member(4)];
    expect(termCheck(term(), twoOfFive, healthyNow)).toEqual([]);
  });

  it("dissolves when a majority has not heartbeated for 48 hours", () => {
    const now = START + 60 * HOUR;
    const members = [
      member(0, { last_heartbeat_at: at(now - 49 * HOUR) }),
      member(1, { last_heartbeat_at: null }),
      member(2, { last_heartbeat_at: at(now - 48.5 * HOUR) }),
      member(3, { last_heartbeat_at: at(now) }),
      member(4, { last_heartbeat_at: at(now) }),
    ];
    expect(termCheck(term({ last_session_at: at(now - HOUR) }), members, now)).toEqual(["majority_unreachable"]);
  });

  it("dissolves after 3 days with zero sessions", () => {
    const members = five({ last_heartbeat_at: at(START + 3 * DAY) });
    expect(termCheck(term({ session_count: 0, last_session_at: null }), members, START + 3 * DAY)).toEqual(["no_sessions_3d"]);
    expect(termCheck(term({ last_session_at: at(START + DAY) }), members, START + 3 * DAY)).toEqual([]);
  });

  it("dissolves on efficiency stagnation and records every trigger that holds", () => {
    expect(termCheck(term({ efficiency_samples: [0.45, 0.4, 0.4] }), five(), healthyNow)).toEqual(["efficiency_stagnation"]);
    const all = termCheck(
      term({ session_count: 10, efficiency_samples: [0.4, 0.3, 0.2], last_session_at: null }),
      five({ responses: 0, last_heartbeat_at: null }),
      START + 8 * DAY,
    );
    expect(all).toEqual([
      "term_expired",
      "session_cap",
      "majority_low_response",
      "majority_unreachable",
      "no_sessions_3d",
      "efficiency_stagnation",
    ]);
  });
});

describe("stagnating", () => {
  it("needs 3 samples that never rise, the last below 0.5", () => {
    expect(stagnating([0.4, 0.4])).toBe(false);
    expect(stagnating([0.4, 0.45, 0.3])).toBe(false);
    expect(stagnating([0.9, 0.6, 0.5])).toBe(false);
    expect(stagnating([0.9, 0.6, 0.49])).toBe(true);
  });
});

describe("efficiency and re-election", () => {
  it("leaves efficiency unknown until a member has been asked", () => {
    expect(efficiency({ requests: 0, responses: 0 })).toBeNull();
    expect(efficiency({ requests: 4, responses: 3 })).toBe(0.75);
  });

  it("keeps the top 40% (rounded down) among members with a verified webhook and efficiency ≥ 0.3; the rest cool down", () => {
    const members = [
      member(0, { responses: 4 }),
      member(1, { responses: 4, webhook_verified: false }),
      member(2, { responses: 3 }),
      member(3, { responses: 1 }), // 0.25 < 0.3
      member(4, { responses: 2 }),
      member(5, { responses: 2, reputation: 70 }),
      member(6, { requests: 0, responses: 0 }), // unknown
      member(7, { responses: 4 }),
      member(8, { responses: 4, reputation: 90 }),
    ];
    // 9 members → 3 seats; qualified by efficiency: n8 (1, rep 90), n0 (1), n7 (1), n2 (0.75), …
    expect(reelect(members)).toEqual({ retained: ["n8", "n0", "n7"], cooled: ["n1", "n2", "n3", "n4", "n5", "n6"] });
  });

  it("keeps fewer than 40% when too few qualify", () => {
    const members = five({ webhook_verified: false });
    members[0] = member(0);
    expect(reelect(members)).toEqual({ retained: ["n0"], cooled: ["n1", "n2", "n3", "n4"] });
  });
});
