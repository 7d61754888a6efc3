import { describe, expect, it } from "vitest";
import { projectsConfig } from "../../../src/projects/config";
import { nextOffer, offerIneligibility, type OfferCandidate } from "../../../src/projects/dispatch";

const HOUR = 3_600_000;
const NOW = Date.parse("2026-12-20T12:00:00.000Z");
const ago = (h: number) => new Date(NOW - h * HOUR).toISOString();
const config = projectsConfig.schema.parse({});

function node(i: number, over: Partial<OfferCandidate> = {}): OfferCandidate {
  return {
    node_id: `node_${String(i).padStart(16, "0")}`,
    reputation: 20 + i,
    model_tier: 1,
    last_heartbeat_at: ago(1),
    suspended_at: null,
    held: 0,
    ...over,
  };
}

describe("who may be offered a council task", () => {
  it("names why a node is passed over", () => {
    expect(offerIneligibility(node(1), [], NOW, config)).toBeNull();
    expect(offerIneligibility(node(1, { suspended_at: ago(1) }), [], NOW, config)).toBe("suspended");
    expect(offerIneligibility(node(1), [node(1).node_id], NOW, config)).toBe("already_offered");
    expect(offerIneligibility(node(1, { reputation: 19.5 }), [], NOW, config)).toBe("reputation");
    expect(offerIneligibility(node(1, { model_tier: 0 }), [], NOW, config)).toBe("model_tier");
    expect(offerIneligibility(node(1, { last_heartbeat_at: ago(48.01) }), [], NOW, config)).toBe("no_recent_heartbeat");
    expect(offerIneligibility(node(1, { last_heartbeat_at: null }), [], NOW, config)).toBe("no_recent_heartbeat");
    expect(offerIneligibility(node(1, { held: 3 }), [], NOW, config)).toBe("holding_limit");
    expect(offerIneligibility(node(1, { held: 2 }), [], NOW, config)).toBeNull();
  });
});

describe("nextOffer", () => {
  it("offers the highest reputation first, fewer claims held breaking ties, with a claim window", () => {
    const pool = [node(1), node(5, { reputation: 40, held: 1 }), node(6, { reputation: 40 }), node(2, { suspended_at: ago(1) })];
    expect(nextOffer({ offer_count: 0, offered_nodes: [] }, pool, NOW, config)).toEqual({
      kind: "offer",
      node_id: node(6).node_id,
      offer_number: 1,
      expires_at: new Date(NOW + 30 * 60_000).toISOString(),
    });
    expect(nextOffer({ offer_count: 1, offered_nodes: [node(6).node_id] }, pool, NOW, config)).toMatchObject({
      node_id: node(5).node_id,
      offer_number: 2,
    });
  });

  it("opens the task to all after max_offers, or when no eligible node is left", () => {
    expect(nextOffer({ offer_count: 3, offered_nodes: [] }, [node(1)], NOW, config)).toEqual({ kind: "open", reason: "max_offers" });
    expect(nextOffer({ offer_count: 1, offered_nodes: [node(1).node_id] }, [node(1)], NOW, config)).toEqual({
      kind: "open",
      reason: "no_eligible_node",
    });
    expect(nextOffer({ offer_count: 0, offered_nodes: [] }, [], NOW, config)).toEqual({ kind: "open", reason: "no_eligible_node" });
  });
});
