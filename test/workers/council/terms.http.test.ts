import { createScheduledController } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../../../src/workers/index";
import { call } from "../../factories";
import { advance, dialog, progress, propose, PROPOSAL, session } from "../../factories/council-http";
import { heartbeat, patchNode, registerNode, type TestNode } from "../../factories/nodes";

const DAY = 24 * 3_600_000;
const nodes: TestNode[] = [];
const byId = new Map<string, TestNode>();
let proposers = 0;

async function proposer() {
  const p = await registerNode({ name: `proposer-${proposers++}`, model_tier: 3 });
  await patchNode(p.node_id, { reputation: 35 }); // may propose, may not deliberate
  await heartbeat(p);
  return p;
}

async function heartbeatAll() {
  for (const n of nodes) await heartbeat(n);
}

async function hourlyCron() {
  await worker.scheduled(createScheduledController({ scheduledTime: Date.now(), cron: "0 * * * *" }), env);
}

describe("council terms", () => {
  it("forms a term from the eligible pool, dissolves it after 7 days on the hourly check, keeps the efficient members with verified webhooks and cools down the rest", async () => {
    for (let i = 0; i < 14; i++) {
      const n = await registerNode({ name: `t${i}`, model_tier: 3, webhook_url: `https://hooks-${i}.node.invalid/council` });
      await patchNode(n.node_id, { reputation: 50 + i });
      await heartbeat(n);
      nodes.push(n);
      byId.set(n.node_id, n);
    }
    const p = await proposer();
    const res = await propose(p, PROPOSAL);
    expect(res.status).toBe(201);
    const overview = await call("/v1/council", { token: null });
    expect(overview.body.term).toMatchObject({ number: 1, status: "active", session_count: 1 });
    expect(Date.parse(overview.body.term.ends_at) - Date.parse(overview.body.term.started_at)).toBe(7 * DAY);
    const term1 = overview.body.term.term_id as string;
    const termMembers: string[] = overview.body.members.map((m: { node_id: string }) => m.node_id);
    expect(termMembers).toHaveLength(9);
    expect(overview.body.members.every((m: { efficiency: number | null }) => m.efficiency === null)).toBe(true); // nobody asked yet: unknown, not 0
    expect((await call(`/v1/nodes/${termMembers[0]}`, { token: null })).body.council_member).toBe(true);

    // one session: seconded, everyone invited, five answer
    const sid = res.body.session_id as string;
    const seated: TestNode[] = (await session(sid)).members
      .filter((m: { role: string }) => m.role !== "proposer")
      .map((m: { node_id: string }) => byId.get(m.node_id)!);
    expect((await dialog(seated[0]!, sid, { dialog_type: "second" })).status).toBe(201);
    await progress();
    const responders = seated.slice(0, 5);
    for (const m of responders) expect((await dialog(m, sid, { dialog_type: "assess", content: "Useful." })).status).toBe(201);
    const after = await call("/v1/council", { token: null });
    const eff = new Map(after.body.members.map((m: { node_id: string; efficiency: number }) => [m.node_id, m.efficiency]));
    for (const m of seated) expect(eff.get(m.node_id)).toBe(responders.includes(m) ? 1 : 0);

    // three of the responders get a verified webhook: 40% of 9 → 3 seats, all theirs
    const keep = responders.slice(1, 4);
    for (const m of keep) await patchNode(m.node_id, { webhook_verified: true });

    await advance(7 * DAY);
    await heartbeatAll();
    await hourlyCron();
    const terms = await call("/v1/council/terms", { token: null });
    expect(terms.body.terms.map((t: { number: number; status: string }) => [t.number, t.status])).toEqual([
      [2, "active"],
      [1, "dissolved"],
    ]);
    expect(terms.body.terms[1].dissolution_reasons).toEqual(["term_expired", "no_sessions_3d"]);
    const term2 = await call(`/v1/council/terms/${terms.body.terms[0].term_id}`, { token: null });
    const retained = term2.body.members.filter((m: { retained: boolean }) => m.retained).map((m: { node_id: string }) => m.node_id);
    expect(retained.sort()).toEqual(keep.map((m) => m.node_id).sort());
    const newcomers = term2.body.members.filter((m: { retained: boolean }) => !m.retained).map((m: { node_id: string }) => m.node_id);
    const neverMembers = nodes.map((n) => n.node_id).filter((id) => !termMembers.includes(id));
    expect(newcomers.sort()).toEqual(neverMembers.sort()); // the 6 not kept cool down; the 5 others fill the seats
    for (const id of termMembers.filter((id) => !retained.includes(id))) {
      const view = await call(`/v1/nodes/${id}`, { token: null });
      expect(Date.parse(view.body.cooldown_until) - Date.parse(terms.body.terms[1].dissolved_at)).toBe(7 * DAY);
      expect(view.body.council_member).toBe(false);
    }
    const dissolved = await call(`/v1/events?type=council.term_dissolved&subject=${term1}`);
    expect(dissolved.body.events[0].payload).toMatchObject({
      reasons: ["term_expired", "no_sessions_3d"],
      retained: expect.any(Array),
      next_term_id: terms.body.terms[0].term_id,
    });
  });

  it("dissolves a term at its 10th session when the next proposal arrives; with too few eligible nodes no new term forms and the session is abandoned", async () => {
    await heartbeatAll();
    const before = (await call("/v1/council", { token: null })).body.term;
    expect(before.session_count).toBe(0);
    for (let i = 0; i < 5; i++) {
      const p = await proposer();
      for (let j = 0; j < 2; j++) expect((await propose(p, { ...PROPOSAL, title: `${PROPOSAL.title} ${i}.${j}` })).status).toBe(201);
    }
    expect((await call("/v1/council", { token: null })).body.term).toMatchObject({ term_id: before.term_id, session_count: 10 });
    const eleventh = await propose(await proposer(), { ...PROPOSAL, title: `${PROPOSAL.title} eleven` });
    expect(eleventh.status).toBe(201);
    expect(eleventh.body.status).toBe("abandoned");
    expect((await session(eleventh.body.session_id)).end_reason).toBe("insufficient_members");
    const overview = await call("/v1/council", { token: null });
    expect(overview.body.term).toBeNull();
    const dissolved = await call(`/v1/events?type=council.term_dissolved&subject=${before.term_id}`);
    expect(dissolved.body.events[0].payload).toMatchObject({
      reasons: ["session_cap"],
      next_term_id: null,
      next_term: "insufficient_members",
    });
  });
});
