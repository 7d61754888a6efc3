import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { swarmTasks } from "../../../src/db/schema";
import { call } from "../../factories";
import { council, dialog, offlineAnswer, progress, propose, PROPOSAL, runOneJob, session } from "../../factories/council-http";
import { drainEvents, registerNode, type TestNode } from "../../factories/nodes";

describe("a full council session over HTTP (12 nodes, test clock)", () => {
  it("runs from proposal to principle: seconding, diverge, amendments, a frozen electorate, weighted votes, synthesis, execution", async () => {
    const { members, proposer, byId } = await council(11);
    // a community voter: may vote (reputation ≥ 20, tier ≥ 1) but not deliberate
    const community = await registerNode({ name: "community", model_tier: 1 });
    await call(`/v1/admin/nodes/${community.node_id}`, { method: "PATCH", body: { reputation: 25 } });

    const submitted = await propose(proposer);
    expect(submitted.status, JSON.stringify(submitted.body)).toBe(201);
    expect(submitted.body).toMatchObject({
      proposal_id: expect.stringMatching(/^prop_/),
      session_id: expect.stringMatching(/^delib_[0-9a-f]{16}$/),
      status: "deliberating",
    });
    const sid = submitted.body.session_id as string;

    let s = await session(sid);
    expect(s.phase).toBe("seconding");
    const seats = s.members.filter((m: { role: string }) => m.role !== "proposer");
    expect(seats).toHaveLength(9);
    expect(seats.filter((m: { role: string }) => m.role === "devils_advocate")).toHaveLength(1);
    expect(s.members[0]).toEqual({ node_id: proposer.node_id, role: "proposer" });
    const seated: TestNode[] = seats.map((m: { node_id: string }) => byId.get(m.node_id)!);
    const outsider = members.find((m) => !seated.includes(m))!;
    const devil = byId.get(s.devils_advocate)!;
    expect(s.deadlines.seconding).toBeDefined();
    expect((await call("/v1/council", { token: null })).body).toMatchObject({
      term: { session_count: 1, status: "active" },
      members: expect.any(Array),
    });

    // every member was asked to second; the proposer cannot second their own proposal
    for (const m of seated) expect((await drainEvents(m)).map((e) => e.type)).toEqual(["council_second_request"]);
    expect((await dialog(proposer, sid, { dialog_type: "second" })).status).toBe(403);
    expect((await dialog(outsider, sid, { dialog_type: "second" })).status).toBe(403);
    expect((await dialog(seated[1]!, sid, { dialog_type: "assess", content: "too early" })).status).toBe(409);
    expect((await dialog(seated[1]!, sid, { dialog_type: "second", content: "Worth discussing." })).status).toBe(201);
    await progress();
    expect((await session(sid)).phase).toBe("diverge");
    for (const m of seated) expect((await drainEvents(m)).map((e) => e.type)).toEqual(["council_invite"]);

    // diverge: every member assesses (the devil's advocate objects)
    for (const m of seated) {
      const content =
        m === devil ? "Objection: a digest could leak draft ballots before voting closes." : "Feasible, valuable and low risk.";
      expect((await dialog(m, sid, { dialog_type: "assess", content })).status).toBe(201);
    }
    await progress();
    s = await session(sid);
    expect(s.phase).toBe("challenge");

    // challenge: an amendment two others support, and everyone posts
    const amend = await dialog(seated[2]!, sid, {
      dialog_type: "amend",
      amendment_type: "add",
      amendment_target: "scope",
      amendment_content: "Redact ballots until voting closes.",
    });
    expect(amend.status).toBe(201);
    expect((await dialog(seated[3]!, sid, { dialog_type: "amend", amendment_type: "add" })).status).toBe(422);
    for (const m of seated.slice(3, 5))
      expect((await dialog(m, sid, { dialog_type: "agree", reply_to: amend.body.id, content: "Yes." })).status).toBe(201);
    for (const m of seated.filter((_, i) => i < 2 || i >= 5))
      expect((await dialog(m, sid, { dialog_type: "develop", content: "Also list the principles." })).status).toBe(201);
    await progress();
    s = await session(sid);
    expect(s.phase).toBe("voting");
    expect(s.amendments).toEqual([expect.objectContaining({ status: "accepted", content: "Redact ballots until voting closes." })]);
    expect(s.proposal_hash).toMatch(/^[0-9a-f]{64}$/);
    const electorate = new Map(s.electorate.map((e: { node_id: string; weight: number }) => [e.node_id, e.weight]));
    for (const m of seated) expect(electorate.get(m.node_id)).toBe(1);
    expect(electorate.get(community.node_id)).toBe(0.5);
    expect(electorate.get(outsider.node_id)).toBe(0.5);
    expect(electorate.has(proposer.node_id)).toBe(false);
    const ballots = await drainEvents(seated[0]!);
    expect(ballots).toEqual([
      expect.objectContaining({
        type: "council_vote",
        payload: expect.objectContaining({ proposal_hash: s.proposal_hash, amendments: [expect.objectContaining({ status: "accepted" })] }),
      }),
    ]);
    expect((await drainEvents(community)).map((e) => e.type)).toEqual(["council_community_vote"]);

    // ballots that must be refused
    const hash = s.proposal_hash as string;
    const ballot = (extra: Record<string, unknown> = {}) => ({
      dialog_type: "vote",
      vote: "approve",
      confidence: 0.9,
      proposal_hash: hash,
      ...extra,
    });
    expect((await dialog(seated[0]!, sid, ballot({ proposal_hash: undefined }))).status).toBe(422);
    const stale = await dialog(seated[0]!, sid, ballot({ proposal_hash: "0".repeat(64) }));
    expect([stale.status, stale.body.code]).toEqual([409, "stale_proposal"]);
    expect((await dialog(seated[0]!, sid, ballot({ confidence: 1.5 }))).status).toBe(422);
    expect((await dialog(proposer, sid, ballot())).body.code).toBe("not_eligible");
    const newcomer = await registerNode({ name: "newcomer" });
    expect((await dialog(newcomer, sid, ballot())).status).toBe(403);

    // all 9 members vote at once (7 approve, 2 reject), plus a community ballot; one tally follows
    const votes = await Promise.all(
      seated.map((m, i) =>
        dialog(
          m,
          sid,
          ballot(i < 7 ? { conditions: i === 0 ? ["redact drafts"] : [] } : { vote: "reject", confidence: 0.6, reasoning: "premature" }),
        ),
      ),
    );
    expect(votes.map((v) => v.status)).toEqual(Array(9).fill(201));
    expect((await dialog(community, sid, ballot({ confidence: 0.5 }))).status).toBe(201);
    const twice = await dialog(seated[0]!, sid, ballot({ vote: "reject" }));
    expect([twice.status, twice.body.code]).toEqual([409, "already_voted"]);
    await progress();
    s = await session(sid);
    expect(s.phase).toBe("converging");
    expect(s.tally).toEqual({ approve: 7.5, reject: 2, revise: 0, total: 9.5, votes: 10 });
    const tallies = await call(`/v1/events?type=council.tallied&subject=${sid}`);
    expect(tallies.body.events).toHaveLength(1);

    // the synthesis job runs on the runner (offline by default): its labelled text is not a consensus
    const job = await runOneJob(["offline"], offlineAnswer);
    expect(job.payload.prompt).toContain(`devil's advocate is ${devil.node_id}`);
    s = await session(sid);
    expect(s.phase).toBe("approved");
    expect(s.decision).toMatchObject({
      outcome: "approved",
      synthesis_source: "template",
      synthesis_note: "synthesis_offline_runtime",
      conditions: ["redact drafts"],
    });
    expect(s.decision.confidence).toBeCloseTo((7 * 0.9 + 0.5 * 0.5) / 7.5, 10);
    expect(s.decision.consensus).toContain(`Devil's advocate ${devil.node_id} objected`);
    expect(s.decision.consensus).toContain("Redact ballots until voting closes.");

    // execution: decision events, the swarm task (90 days), the principle (confidence ≥ 0.7)
    const proposerEvents = await drainEvents(proposer);
    expect(proposerEvents).toEqual([
      expect.objectContaining({
        type: "council_decision",
        payload: expect.objectContaining({
          outcome: "approved",
          quality_score: expect.any(Number),
          consensus: s.decision.consensus,
          conditions: ["redact drafts"],
        }),
      }),
    ]);
    for (const m of seated) expect((await drainEvents(m)).map((e) => e.type)).toContain("council_decision_notification");
    const [task] = await getDb(env.DB).select().from(swarmTasks).where(eq(swarmTasks.sourceSessionId, sid));
    expect(task).toMatchObject({ status: "open", title: PROPOSAL.title });
    expect(Date.parse(task!.expiresAt) - Date.parse(task!.createdAt)).toBe(90 * 24 * 3_600_000);
    expect(task!.body).toContain(PROPOSAL.body);
    expect(task!.body).toContain(s.decision.consensus);
    const principles = await call("/v1/governance/principles", { token: null });
    expect(principles.body.principles).toEqual([
      expect.objectContaining({
        source_session_id: sid,
        confidence: s.decision.confidence,
        statement: expect.stringContaining(PROPOSAL.title),
      }),
    ]);
    const check = await call("/v1/governance/principles/check", {
      token: null,
      body: { text: "Publish a weekly digest of council records for every node" },
    });
    expect(check.body.max_overlap).toBeGreaterThan(0.1);
    expect(check.body.overlaps[0].principle_id).toBe(principles.body.principles[0].principle_id);
    const proposal = await call(`/v1/council/proposals/${submitted.body.proposal_id}`, { token: null });
    expect(proposal.body).toMatchObject({ status: "approved", session_id: sid, prescreen: { mode: "off", status: "skipped" } });

    // the public trail holds every dialog and ballot, and nothing secret
    expect(s.dialogs.length).toBeGreaterThanOrEqual(1 + 9 + 1 + 2 + 6 + 10);
    expect(s.votes).toHaveLength(10);
    const trail = JSON.stringify(s);
    for (const n of [proposer, ...seated, community]) expect(trail).not.toContain(n.token.split(".")[1]);
  });
});
