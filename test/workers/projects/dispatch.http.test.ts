import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { swarmTaskIdFor } from "../../../src/council/effects";
import { getDb } from "../../../src/db/client";
import { swarmTasks } from "../../../src/db/schema";
import { newId } from "../../../src/lib/ids";
import { call } from "../../factories";
import { advance, PROPOSAL } from "../../factories/council-http";
import { drainEvents, eligibleNode, heartbeat, patchNode, registerNode, type TestNode } from "../../factories/nodes";
import { councilDecides, councilSeats, projectsTick } from "../../factories/projects";

/**
 * Dispatch of council tasks (an approved general proposal's): offers to eligible nodes in turn, each
 * with a claim window, then open to all. This file moves the test clock: each test starts by letting
 * every earlier node's heartbeat go stale (48 h), so only its own nodes are eligible.
 */

const MINUTE = 60_000;
const claim = (id: string, node: TestNode) => call(`/v1/swarm/tasks/${id}/claim`, { token: node.token, method: "POST" });
const task = async (id: string) => (await call(`/v1/swarm/tasks/${id}`, { token: null })).body;
const stale = () => advance(49 * 3_600_000);

/** A council task as the council's approval writes it: open, being dispatched. */
async function councilTask() {
  const id = newId("task");
  const now = Date.parse((await call("/v1/admin/clock")).body.now);
  await getDb(env.DB)
    .insert(swarmTasks)
    .values({
      id,
      title: "Publish a weekly digest",
      body: "The council's consensus.",
      status: "open",
      dispatch: "offering",
      sourceSessionId: `delib_${"c".repeat(16)}`,
      createdAt: new Date(now).toISOString(),
      expiresAt: new Date(now + 90 * 86_400_000).toISOString(),
    });
  return id;
}

const offers = async (node: TestNode, taskId: string) =>
  (await drainEvents(node)).filter((e) => e.type === "swarm_task_offer" && e.payload.task_id === taskId);

describe("offering an approved council task", () => {
  it("offers it to the best eligible node, which alone may claim it in its window; the task stays open and listed", async () => {
    await stale();
    const [best, second, third] = [await eligibleNode("best", 70, 1), await eligibleNode("second", 60, 2), await eligibleNode("third", 45)];
    const newcomer = await eligibleNode("newcomer", 15); // below the claim floor: never offered
    const suspended = await eligibleNode("suspended", 95);
    await patchNode(suspended.node_id, { suspended: true });
    const silent = await registerNode({ name: "silent" });
    await patchNode(silent.node_id, { reputation: 99 }); // no heartbeat: never offered
    const id = await councilTask();

    const summary = await projectsTick();
    expect(summary.offers[id]).toBe(`offered:${best.node_id}`);
    const [offer] = await offers(best, id);
    expect(offer!.payload).toMatchObject({
      task_id: id,
      offer_number: 1,
      claim: `/v1/swarm/tasks/${id}/claim`,
      title: "Publish a weekly digest",
    });
    for (const n of [second, third, newcomer]) expect(await offers(n, id)).toEqual([]);
    const view = await task(id);
    expect(view).toMatchObject({
      status: "open",
      dispatch: { state: "offering", offered_to: best.node_id, offer_expires_at: offer!.payload.offer_expires_at, offers: 1 },
    });
    const listed = await call("/v1/swarm/tasks?status=open&limit=500", { token: null });
    expect(listed.body.tasks.map((t: { task_id: string }) => t.task_id)).toContain(id);
    const events = await call(`/v1/events?type=swarm_task.offered&subject=${id}`);
    expect(events.body.events.map((e: any) => e.payload.node_id)).toEqual([best.node_id]);

    // another node's claim during the window is refused, saying until when
    const early = await claim(id, second);
    expect([early.status, early.body.reason, early.body.offer_expires_at]).toEqual([
      409,
      "offered_to_another_node",
      offer!.payload.offer_expires_at,
    ]);
    // the offered node wins against a crowd claiming at the same moment
    const crowd = [second, third, ...(await Promise.all(Array.from({ length: 8 }, (_, i) => eligibleNode(`crowd-${i}`, 30))))];
    const results = await Promise.all([claim(id, best), ...crowd.map((n) => claim(id, n))]);
    expect(results[0]!.status).toBe(200);
    expect(results.slice(1).map((r) => r.status)).toEqual(crowd.map(() => 409));
    expect(await task(id)).toMatchObject({ status: "claimed", claimed_by: best.node_id });
    const claimed = await call(`/v1/events?type=swarm_task.claimed&subject=${id}`);
    expect(claimed.body.events.map((e: any) => [e.payload.node_id, e.payload.offered])).toEqual([[best.node_id, true]]);
  });

  it("moves the offer to the next node when the window lapses, then opens the task to all after max_offers", async () => {
    await stale();
    const nodes = [await eligibleNode("a", 80), await eligibleNode("b", 75), await eligibleNode("c", 70), await eligibleNode("d", 65)];
    const id = await councilTask();
    const keepAlive = async () => {
      for (const n of nodes) await heartbeat(n);
    };
    expect((await projectsTick()).offers[id]).toBe(`offered:${nodes[0]!.node_id}`);
    await advance(29 * MINUTE);
    expect((await projectsTick()).offers[id]).toBeUndefined(); // still in the window
    await advance(2 * MINUTE);
    await keepAlive();
    expect((await projectsTick()).offers[id]).toBe(`offered:${nodes[1]!.node_id}`);
    // the first node's window is over: now the second holds the offer
    expect((await claim(id, nodes[0]!)).body.reason).toBe("offered_to_another_node");
    await advance(31 * MINUTE);
    await keepAlive();
    expect((await projectsTick()).offers[id]).toBe(`offered:${nodes[2]!.node_id}`);
    await advance(31 * MINUTE);
    expect((await projectsTick()).offers[id]).toBe("open:max_offers");
    expect(await task(id)).toMatchObject({
      status: "open",
      dispatch: { state: "open", offered_to: null, offers: 3, offered_nodes: nodes.slice(0, 3).map((n) => n.node_id) },
    });
    expect((await call(`/v1/events?type=swarm_task.open_to_all&subject=${id}`)).body.events[0].payload).toMatchObject({
      reason: "max_offers",
    });
    // open to all: of a crowd claiming at once, exactly one wins
    const results = await Promise.all(nodes.map((n) => claim(id, n)));
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.status === 409)).toHaveLength(3);
    expect((await projectsTick()).offers[id]).toBeUndefined();
  });

  it("skips nodes at their holding limit and opens the task when no eligible node is left", async () => {
    await stale();
    const busy = await eligibleNode("busy", 90);
    const held = [await councilTask(), await councilTask(), await councilTask()];
    // let the busy node hold three claims (its holding limit) before the fourth task is dispatched
    for (const h of held) {
      await getDb(env.DB).update(swarmTasks).set({ dispatch: null }).where(eq(swarmTasks.id, h));
      expect((await claim(h, busy)).status).toBe(200);
    }
    const fourth = await councilTask();
    const refused = await claim(fourth, busy);
    expect([refused.status, refused.body.reason, refused.body.limit]).toEqual([409, "holding_limit", 3]);
    expect((await projectsTick()).offers[fourth]).toBe("open:no_eligible_node");
    expect((await task(fourth)).dispatch).toMatchObject({ state: "open", offers: 0 });
  });

  it("offers the task of a general proposal the council approves at once, and credits the session's participants", async () => {
    await stale();
    const seats = await councilSeats(9, "dispatch-council");
    const { sessionId } = await councilDecides(seats.proposer, seats, PROPOSAL);
    const id = swarmTaskIdFor(sessionId);
    const view = await task(id);
    expect(view).toMatchObject({ kind: "council", status: "open", dispatch: { state: "offering", offers: 1 } });
    // the highest reputation among the heartbeating nodes that may claim (council members are 50 + i)
    expect(view.dispatch.offered_to).toBe(seats.members[8]!.node_id);
    expect(await offers(seats.members[8]!, id)).toHaveLength(1);

    const ledger = async (n: TestNode) => (await call(`/v1/nodes/${n.node_id}/reputation`, { token: null })).body.entries;
    const seated = (await call(`/v1/council/sessions/${sessionId}`, { token: null })).body.members.filter(
      (m: any) => m.role !== "proposer",
    );
    const member = seats.byId.get(seated[0].node_id)!;
    expect((await ledger(member)).map((e: any) => [e.source, e.reference, e.delta])).toEqual(
      expect.arrayContaining([
        ["session_participation", sessionId, 1],
        ["vote_cast", sessionId, 0.5],
      ]),
    );
    expect((await ledger(seats.proposer)).map((e: any) => [e.source, e.reference, e.delta])).toContainEqual([
      "proposal_approved",
      sessionId,
      3,
    ]);
  });
});
