import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { seatTermMembers } from "../../../src/council/open-session";
import { COUNCIL_RULES, HOUR } from "../../../src/council/rules";
import type { Candidate } from "../../../src/council/selection";
import { call } from "../../factories";
import { advance, council, PROPOSAL, propose, session } from "../../factories/council-http";
import { eligibleNode, heartbeat, patchNode, registerNode } from "../../factories/nodes";

/** Term members are checked again when a session opens (seed 004: no heartbeat in 48 h → not selected). */

describe("seatTermMembers", () => {
  const NOW = Date.parse("2026-12-01T12:00:00.000Z");
  const c = (i: number, over: Partial<Candidate> = {}): Candidate => ({
    node_id: `node_${String(i).padStart(16, "0")}`,
    reputation: 50,
    model_tier: 3,
    last_heartbeat_at: new Date(NOW - HOUR).toISOString(),
    last_dialog_at: null,
    cooldown_until: null,
    ...over,
  });

  it("seats the eligible members in term order and records each skipped one with its reason", () => {
    const term = [
      c(1),
      c(2, { cooldown_until: new Date(NOW + HOUR).toISOString() }),
      c(3, { reputation: 39 }),
      c(4, { model_tier: 2 }),
      c(5, { last_heartbeat_at: new Date(NOW - 49 * HOUR).toISOString() }),
      c(6, { suspended_at: new Date(NOW).toISOString() }),
      c(7),
      c(8),
    ];
    expect(seatTermMembers(term, c(8).node_id, NOW, COUNCIL_RULES)).toEqual({
      seated: [c(1).node_id, c(7).node_id],
      skipped: [
        { node_id: c(2).node_id, reason: "cooling_down" },
        { node_id: c(3).node_id, reason: "reputation" },
        { node_id: c(4).node_id, reason: "model_tier" },
        { node_id: c(5).node_id, reason: "no_recent_heartbeat" },
        { node_id: c(6).node_id, reason: "suspended" },
      ],
    });
  });
});

describe("a session of a standing term", () => {
  it("does not seat members who are cooling down, below a floor, silent for 48 h or suspended, fills their seats from the pool and shows why", async () => {
    const c = await council(9, "recheck");
    const first = await propose(c.proposer);
    expect(first.status).toBe(201);
    const term = (await call("/v1/council", { token: null })).body;
    expect(term.members).toHaveLength(9);
    const termIds = term.members.map((m: { node_id: string }) => m.node_id) as string[];
    const [cooling, demoted, silent, suspended] = termIds.map((id) => c.byId.get(id)!);

    // 49 hours later: everyone heartbeats but the silent one; then the other changes
    await advance(49 * HOUR);
    for (const id of termIds) if (id !== silent!.node_id) await heartbeat(c.byId.get(id)!);
    await env.DB.prepare("UPDATE nodes SET cooldown_until = ? WHERE id = ?")
      .bind(new Date(Date.parse((await call("/v1/admin/clock")).body.now) + 24 * HOUR).toISOString(), cooling!.node_id)
      .run();
    await patchNode(demoted!.node_id, { reputation: 35 });
    await patchNode(suspended!.node_id, { suspended: true });
    const pool = [
      await eligibleNode("recheck-pool-0", 48),
      await eligibleNode("recheck-pool-1", 47),
      await eligibleNode("recheck-pool-2", 46),
    ];
    const ineligible = await eligibleNode("recheck-low", 39); // below the seat floor: never a filler
    const proposer = await registerNode({ name: "recheck-proposer-2", model_tier: 3 });
    await patchNode(proposer.node_id, { reputation: 35 });
    await heartbeat(proposer);

    const res = await propose(proposer, { ...PROPOSAL, title: `${PROPOSAL.title} (second)` });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const s = await session(res.body.session_id);
    const members = s.members.filter((m: { role: string }) => m.role !== "proposer");
    const seatedIds = members.map((m: { node_id: string }) => m.node_id);
    expect(s.skipped_members).toEqual([
      { node_id: cooling!.node_id, reason: "cooling_down" },
      { node_id: demoted!.node_id, reason: "reputation" },
      { node_id: silent!.node_id, reason: "no_recent_heartbeat" },
      { node_id: suspended!.node_id, reason: "suspended" },
    ]);
    for (const skipped of [cooling, demoted, silent, suspended]) expect(seatedIds).not.toContain(skipped!.node_id);
    // five term members stay; the pool fills as many of the four seats as it can (three eligible nodes)
    expect(members.filter((m: { source: string }) => m.source === "term")).toHaveLength(5);
    expect(
      members
        .filter((m: { source: string }) => m.source === "pool")
        .map((m: { node_id: string }) => m.node_id)
        .sort(),
    ).toEqual(pool.map((p) => p.node_id).sort());
    expect(seatedIds).not.toContain(ineligible.node_id);
    const opened = await call(`/v1/events?type=council.session_opened&subject=${res.body.session_id}`);
    expect(opened.body.events[0].payload.skipped_members).toEqual(s.skipped_members);
  });
});
