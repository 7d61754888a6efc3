import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { governancePrinciples, projects, swarmTasks } from "../../../src/db/schema";
import { getCouncilSession } from "../../../src/durable-objects/council-session-rpc";
import { call, createOperator } from "../../factories";
import { advance, dialog, progress, propose, PROPOSAL, session, tick } from "../../factories/council-http";
import { drainEvents, eligibleNode, heartbeat, type TestNode } from "../../factories/nodes";
import { DECOMPOSITION, decompose } from "../../factories/projects";

let seq = 0;
// Storage (and the council term) is shared by the tests of a file: every node any test made.
const known = new Map<string, TestNode>();

/** Six more eligible members; synthesis off for speed. */
async function setup() {
  await call("/v1/config/council", { method: "PUT", body: { synthesis: "off" } });
  for (let i = 0; i < 6; i++) {
    const m = await eligibleNode(`veto-m${seq++}`, 50);
    known.set(m.node_id, m);
  }
  return { byId: known };
}

/** Drives one proposal to a decision where every member votes `vote` with `confidence`; the proposer is auto-seconded. */
async function decide(byId: Map<string, TestNode>, body: Record<string, unknown> = PROPOSAL, vote = "approve", confidence = 0.9) {
  for (const m of byId.values()) await heartbeat(m);
  const proposer = await eligibleNode(`veto-p${seq++}`, 65);
  known.set(proposer.node_id, proposer);
  const res = await propose(proposer, body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  const sid = res.body.session_id as string;
  let s = await session(sid);
  expect(s.phase).toBe("diverge"); // auto-second: reputation ≥ 60 (or a term member)
  expect(s.seconded).toMatchObject({ auto: true });
  const seated = s.members.filter((m: { role: string }) => m.role !== "proposer").map((m: { node_id: string }) => byId.get(m.node_id)!);
  for (const m of seated) await heartbeat(m);
  for (const m of seated) expect((await dialog(m, sid, { dialog_type: "assess", content: "Sound." })).status).toBe(201);
  await progress();
  for (const m of seated) expect((await dialog(m, sid, { dialog_type: "develop", content: "Agreed." })).status).toBe(201);
  await progress();
  s = await session(sid);
  expect(s.phase).toBe("voting");
  for (const m of seated)
    expect((await dialog(m, sid, { dialog_type: "vote", vote, confidence, proposal_hash: s.proposal_hash })).status).toBe(201);
  await progress();
  s = await session(sid);
  return { sid, s, proposer, seated };
}

describe("emergency veto", () => {
  it("takes effect at once and revokes the executed effects; the same admin cannot ratify, a second admin can", async () => {
    const { byId } = await setup();
    const { sid, s, proposer } = await decide(byId);
    expect(s.phase).toBe("approved");
    const db = getDb(env.DB);
    expect((await db.select().from(governancePrinciples).where(eq(governancePrinciples.sourceSessionId, sid)))[0]).toMatchObject({
      status: "active",
    });
    await drainEvents(proposer);

    const adminA = await createOperator("admin", "admin-a");
    const adminB = await createOperator("admin", "admin-b");
    const manager = await createOperator("manager", "mgr");
    expect((await call(`/v1/council/sessions/${sid}/veto`, { token: manager, body: { reason: "x" } })).status).toBe(403);
    const vetoed = await call(`/v1/council/sessions/${sid}/veto`, { token: adminA, body: { reason: "Emergency: legal review needed" } });
    expect(vetoed.status).toBe(200);
    expect(vetoed.body).toMatchObject({
      phase: "vetoed",
      veto: { reason: "Emergency: legal review needed", status: "pending_ratification", phase_before: "approved" },
    });
    expect(Date.parse(vetoed.body.veto.ratify_by) - Date.parse(vetoed.body.veto.at)).toBe(72 * 3_600_000);
    expect((await db.select().from(governancePrinciples).where(eq(governancePrinciples.sourceSessionId, sid)))[0]).toMatchObject({
      status: "revoked",
    });
    expect((await db.select().from(swarmTasks).where(eq(swarmTasks.sourceSessionId, sid)))[0]).toMatchObject({ status: "revoked" });
    expect(
      (await call("/v1/governance/principles", { token: null })).body.principles.map(
        (p: { source_session_id: string }) => p.source_session_id,
      ),
    ).not.toContain(sid);
    expect((await drainEvents(proposer)).map((e) => [e.type, e.payload.outcome])).toEqual([["council_decision", "vetoed"]]);
    expect((await call(`/v1/council/proposals/${s.proposal_id}`, { token: null })).body.status).toBe("vetoed");

    const same = await call(`/v1/council/sessions/${sid}/veto/ratify`, { method: "POST", token: adminA });
    expect([same.status, same.body.code]).toEqual([403, "forbidden"]);
    const ratified = await call(`/v1/council/sessions/${sid}/veto/ratify`, { method: "POST", token: adminB });
    expect(ratified.status).toBe(200);
    expect(ratified.body.veto).toMatchObject({ status: "ratified" });
    expect((await call(`/v1/council/sessions/${sid}/veto/ratify`, { method: "POST", token: adminB })).status).toBe(409);
    // a ratified veto never lapses
    await advance(73 * 3_600_000);
    await tick();
    expect((await session(sid)).phase).toBe("vetoed");
  });

  it("lapses after 72 hours without ratification: the decision is restored and its effects run again", async () => {
    const { byId } = await setup();
    const { sid } = await decide(byId, { ...PROPOSAL, title: "Keep a public changelog of principles" });
    const adminA = await createOperator("admin", "admin-c");
    expect((await call(`/v1/council/sessions/${sid}/veto`, { token: adminA, body: { reason: "Pause" } })).status).toBe(200);
    await advance(71 * 3_600_000);
    await tick();
    expect((await session(sid)).phase).toBe("vetoed");
    await advance(1 * 3_600_000 + 1_000);
    await tick();
    const s = await session(sid);
    expect(s.phase).toBe("approved");
    expect(s.veto).toMatchObject({ status: "lapsed" });
    const db = getDb(env.DB);
    expect((await db.select().from(governancePrinciples).where(eq(governancePrinciples.sourceSessionId, sid)))[0]).toMatchObject({
      status: "active",
      revokedAt: null,
    });
    expect(await db.select().from(swarmTasks).where(eq(swarmTasks.sourceSessionId, sid))).toEqual([
      expect.objectContaining({ status: "open" }),
    ]);
    expect((await call(`/v1/council/proposals/${s.proposal_id}`, { token: null })).body.status).toBe("approved");
    expect((await call(`/v1/events?type=council.veto_lapsed&subject=${sid}`)).body.events).toHaveLength(1);
  });

  it("moves a project through council_review to approved, reverts it on veto, and archives a rejected one", async () => {
    const { byId } = await setup();
    const project = {
      ...PROPOSAL,
      title: "Build an open glossary project",
      kind: "project",
      project: { name: "glossary", summary: "An open glossary of council terms." },
    };
    const approved = await decide(byId, project);
    expect(approved.s.phase).toBe("approved");
    const db = getDb(env.DB);
    const [p] = await db.select().from(projects).where(eq(projects.id, approved.s.project_id));
    expect(p).toMatchObject({ status: "approved", name: "glossary", sessionId: approved.sid });
    const moves = await call(`/v1/events?type=project.status_changed&subject=${p!.id}`);
    expect(moves.body.events.map((e: { payload: { from: string; to: string } }) => `${e.payload.from}→${e.payload.to}`)).toEqual([
      "proposed→council_review",
      "council_review→approved",
    ]);
    expect(await db.select().from(swarmTasks).where(eq(swarmTasks.sourceSessionId, approved.sid))).toEqual([]); // projects get tasks by decomposition, not here
    const admin = await createOperator("admin", "admin-d");
    await call(`/v1/council/sessions/${approved.sid}/veto`, { token: admin, body: { reason: "Hold" } });
    expect((await db.select().from(projects).where(eq(projects.id, p!.id)))[0]!.status).toBe("proposed");

    const rejected = await decide(
      byId,
      { ...project, title: "Build a closed glossary project", project: { name: "closed", summary: "Closed." } },
      "reject",
      0.8,
    );
    expect(rejected.s.phase).toBe("rejected");
    expect((await db.select().from(projects).where(eq(projects.id, rejected.s.project_id)))[0]!.status).toBe("archived");
  });

  it("refuses a second veto once the first lapsed (409 veto_lapsed), from the same admin or another, and the decision stands", async () => {
    const { byId } = await setup();
    const { sid } = await decide(byId, { ...PROPOSAL, title: "Keep the ballots public after voting" });
    const adminA = await createOperator("admin", "admin-lapse-a");
    const adminB = await createOperator("admin", "admin-lapse-b");
    expect((await call(`/v1/council/sessions/${sid}/veto`, { token: adminA, body: { reason: "Pause" } })).status).toBe(200);
    await advance(72 * 3_600_000 + 1_000);
    await tick();
    const restored = await session(sid);
    expect(restored).toMatchObject({ phase: "approved", veto: { status: "lapsed" } });
    const eventsBefore = (await call(`/v1/events?subject=${sid}&limit=500`)).body.events.length;
    for (const token of [adminA, adminB]) {
      const again = await call(`/v1/council/sessions/${sid}/veto`, { token, body: { reason: "Pause again" } });
      expect([again.status, again.body.code]).toEqual([409, "veto_lapsed"]);
      expect(again.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    }
    // nothing changed: the decision, its principle and swarm task, the veto record, the trail
    const after = await session(sid);
    expect(after.phase).toBe("approved");
    expect(after.veto).toEqual(restored.veto);
    const db = getDb(env.DB);
    expect((await db.select().from(governancePrinciples).where(eq(governancePrinciples.sourceSessionId, sid)))[0]).toMatchObject({
      status: "active",
    });
    expect((await db.select().from(swarmTasks).where(eq(swarmTasks.sourceSessionId, sid)))[0]).toMatchObject({ status: "open" });
    expect((await call(`/v1/events?subject=${sid}&limit=500`)).body.events).toHaveLength(eventsBefore);
  });

  it("refuses the bootstrap ADMIN_TOKEN as the one who vetoes and as the second admin who ratifies (403, bootstrap_token_not_a_decider)", async () => {
    const { byId } = await setup();
    const { sid } = await decide(byId, { ...PROPOSAL, title: "Name every ratifier in the record" });
    // `call` sends the bootstrap ADMIN_TOKEN when no token is given
    const bootVeto = await call(`/v1/council/sessions/${sid}/veto`, { body: { reason: "Setup secret" } });
    expect([bootVeto.status, bootVeto.body.code, bootVeto.body.reason]).toEqual([403, "forbidden", "bootstrap_token_not_a_decider"]);
    expect((await session(sid)).phase).toBe("approved");

    const adminA = await createOperator("admin", "admin-boot-a");
    expect((await call(`/v1/council/sessions/${sid}/veto`, { token: adminA, body: { reason: "Review" } })).status).toBe(200);
    const bootRatify = await call(`/v1/council/sessions/${sid}/veto/ratify`, { method: "POST" });
    expect([bootRatify.status, bootRatify.body.code, bootRatify.body.reason]).toEqual([403, "forbidden", "bootstrap_token_not_a_decider"]);
    expect((await session(sid)).veto).toMatchObject({ status: "pending_ratification" });
    expect((await call(`/v1/events?type=council.veto_ratified&subject=${sid}`)).body.events).toEqual([]);
    // so a bootstrap "ratification" cannot keep the veto from lapsing
    await advance(72 * 3_600_000 + 1_000);
    await tick();
    expect((await session(sid)).veto).toMatchObject({ status: "lapsed" });
  });

  it("refuses to veto a session whose project is already active (409 project_active) and leaves project and decision running", async () => {
    const { byId } = await setup();
    const { sid, s } = await decide(byId, {
      ...PROPOSAL,
      title: "Build an active glossary project",
      kind: "project",
      project: { name: "active-glossary", summary: "An open glossary that goes live." },
    });
    expect(s.phase).toBe("approved");
    const manager = await createOperator("manager", "veto-active-mgr");
    const landed = await decompose(s.project_id, DECOMPOSITION, manager);
    expect(landed.status, JSON.stringify(landed.body)).toBe(200);
    expect(landed.body.status).toBe("active");
    const db = getDb(env.DB);
    const admin = await createOperator("admin", "admin-active");
    const eventsBefore = (await call(`/v1/events?subject=${sid}&limit=500`)).body.events.length;
    const refused = await call(`/v1/council/sessions/${sid}/veto`, { token: admin, body: { reason: "Stop it" } });
    expect([refused.status, refused.body.code]).toEqual([409, "project_active"]);
    expect(refused.body.project_id).toBe(s.project_id);
    expect((await db.select().from(projects).where(eq(projects.id, s.project_id)))[0]!.status).toBe("active");
    const after = await session(sid);
    expect(after.phase).toBe("approved");
    expect(after.veto).toBeUndefined();
    expect((await call(`/v1/events?subject=${sid}&limit=500`)).body.events).toHaveLength(eventsBefore);

    // The save refuses it too (a decomposition that lands after the route looked): the session's
    // object, asked directly, changes nothing.
    const direct = await getCouncilSession(env, sid).veto({
      session_id: sid,
      by: "op_direct",
      reason: "race",
      now: Date.now() + 365 * 86_400_000,
    });
    expect(direct).toMatchObject({ ok: false, code: "project_active" });
    expect((await session(sid)).phase).toBe("approved");
    expect((await db.select().from(projects).where(eq(projects.id, s.project_id)))[0]!.status).toBe("active");
  });

  it("turns an approval with confidence below 0.7 into no principle, and a revise into revise", async () => {
    const { byId } = await setup();
    const low = await decide(byId, { ...PROPOSAL, title: "Rotate the digest editor monthly" }, "approve", 0.6);
    expect(low.s.decision).toMatchObject({ outcome: "approved", confidence: 0.6 });
    expect(await getDb(env.DB).select().from(governancePrinciples).where(eq(governancePrinciples.sourceSessionId, low.sid))).toEqual([]);
    const revise = await decide(byId, { ...PROPOSAL, title: "Rename the digest to bulletin" }, "revise", 0.9);
    expect(revise.s.phase).toBe("revise");
  });
});
