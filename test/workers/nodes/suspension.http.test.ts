import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { swarmTasks } from "../../../src/db/schema";
import { newId } from "../../../src/lib/ids";
import { notifyNodesStatements } from "../../../src/nodes/events";
import { call } from "../../factories";
import { council, dialog, progress, PROPOSAL, propose, session, toVoting } from "../../factories/council-http";
import { eligibleNode, heartbeat, patchNode } from "../../factories/nodes";

/** An admin's suspension on `/v1` (issue 18 follow-up): the node's writes are refused and the council passes it over. */

const lastBeat = async (nodeId: string) =>
  (await env.DB.prepare("SELECT last_heartbeat_at AS t FROM nodes WHERE id = ?").bind(nodeId).first<{ t: string | null }>())!.t;

async function openTask() {
  const id = newId("task");
  const now = Date.parse((await call("/v1/admin/clock")).body.now);
  await getDb(env.DB)
    .insert(swarmTasks)
    .values({
      id,
      title: "Publish a weekly digest",
      body: "The council's consensus.",
      status: "open",
      sourceSessionId: `delib_${"d".repeat(16)}`,
      createdAt: new Date(now).toISOString(),
      expiresAt: new Date(now + 90 * 86_400_000).toISOString(),
    });
  return id;
}

describe("a suspended node on /v1", () => {
  it("is refused its heartbeat (403 node_suspended, nothing recorded or delivered) until an admin lifts it", async () => {
    const node = await eligibleNode("hb-suspended", 40);
    const db = getDb(env.DB);
    await db.batch(notifyNodesStatements(db, [node.node_id], { type: "council_invite", payload: { n: 1 } }, new Date()) as [any]);
    await patchNode(node.node_id, { suspended: true });
    const before = await lastBeat(node.node_id);
    const hb = await call(`/v1/nodes/${node.node_id}/heartbeat`, { token: node.token, body: {} });
    expect([hb.status, hb.body.code, hb.body.reason, hb.body.suspended_at]).toEqual([
      403,
      "forbidden",
      "node_suspended",
      expect.any(String),
    ]);
    expect(hb.body.pending_events).toBeUndefined();
    expect(await lastBeat(node.node_id)).toBe(before);
    await patchNode(node.node_id, { suspended: false });
    const back = await heartbeat(node);
    expect(back.pending_events.map((e) => e.type)).toContain("council_invite");
    await patchNode(node.node_id, { reputation: 10 }); // out of the council pool of the tests below
  });

  it("cannot claim, complete, release or propose", async () => {
    const node = await eligibleNode("writer-suspended", 45);
    const [free, held] = [await openTask(), await openTask()];
    expect((await call(`/v1/swarm/tasks/${held}/claim`, { token: node.token, method: "POST" })).status).toBe(200);
    await patchNode(node.node_id, { suspended: true });
    const refused = [
      await call(`/v1/swarm/tasks/${free}/claim`, { token: node.token, method: "POST" }),
      await call(`/v1/swarm/tasks/${held}/complete`, { token: node.token, body: { summary: "Done, reviewed and tested." } }),
      await call(`/v1/swarm/tasks/${held}/release`, { token: node.token, method: "POST" }),
      await propose(node),
    ];
    for (const r of refused) expect([r.status, r.body.reason]).toEqual([403, "node_suspended"]);
    expect((await call(`/v1/swarm/tasks/${free}`, { token: null })).body.status).toBe("open");
    expect((await call(`/v1/swarm/tasks/${held}`, { token: null })).body).toMatchObject({ status: "claimed", claimed_by: node.node_id });
  });

  it("is not seated nor given a community vote, and its dialogs in a session are refused", async () => {
    const c = await council(7, "susp");
    const [out, speaker] = [c.members[6]!, c.members[5]!]; // the two highest reputations
    await patchNode(out.node_id, { suspended: true });
    const res = await propose(c.proposer, { ...PROPOSAL, title: `${PROPOSAL.title} (suspension)` });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const s = await session(res.body.session_id);
    const seated = s.members.filter((m: { role: string }) => m.role !== "proposer").map((m: { node_id: string }) => m.node_id);
    expect(seated).not.toContain(out.node_id);
    expect(seated).toContain(speaker.node_id);
    // a seated member suspended mid-session may not speak
    await patchNode(speaker.node_id, { suspended: true });
    const said = await dialog(speaker, res.body.session_id, { dialog_type: "second" });
    expect([said.status, said.body.reason]).toEqual([403, "node_suspended"]);
    await patchNode(speaker.node_id, { suspended: false });
    expect((await dialog(speaker, res.body.session_id, { dialog_type: "second" })).status).toBe(201);

    // voting opens: the community electorate (reputation ≥ 20, tier ≥ 1) leaves the suspended node out
    const [voter, barred] = [await eligibleNode("susp-community", 25, 1), await eligibleNode("susp-barred", 25, 1)];
    await patchNode(barred.node_id, { suspended: true });
    await progress();
    const v = await toVoting(
      res.body.session_id,
      seated.map((id: string) => c.byId.get(id)!),
    );
    const electorate = v.electorate.map((e: { node_id: string }) => e.node_id);
    expect(electorate).toContain(voter.node_id);
    expect(electorate).not.toContain(barred.node_id);
    expect(electorate).not.toContain(out.node_id);
  });
});
