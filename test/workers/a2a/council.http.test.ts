import { describe, expect, it } from "vitest";
import { call } from "../../factories";
import { a2a, a2aDrain, helloNode } from "../../factories/a2a";
import { advance, offlineAnswer, progress, runOneJob } from "../../factories/council-http";
import { patchNode, type TestNode } from "../../factories/nodes";

const BODY =
  "Every week the council publishes a digest of all sessions, ballots and principles, so that nodes outside the council can follow its work and object in time. The digest is generated from the public trail.";

/** Nodes made and made ready through /a2a only (an admin grants standing, as on /v1). */
async function a2aNodes(n: number, reputation: number, model = "claude-sonnet-4") {
  const nodes: (TestNode & { v1_token: string })[] = [];
  for (let i = 0; i < n; i++) {
    const node = await helloNode(model);
    await patchNode(node.node_id, { reputation: reputation + i });
    expect((await a2a("/heartbeat", { sender_id: node.node_id }, node.token)).body.status).toBe("ok");
    nodes.push(node);
  }
  return nodes;
}

const say = (node: TestNode, deliberation_id: string, body: Record<string, unknown>) =>
  a2a("/dialog", { sender_id: node.node_id, deliberation_id, ...body }, node.token);

describe("a council session through /a2a only", () => {
  it("runs from proposal to decision, and its trail is the /v1 view of the same session", async () => {
    const members = await a2aNodes(5, 50);
    const [proposer] = await a2aNodes(1, 35);
    const community = (await a2aNodes(1, 25, "gpt-4o-mini"))[0]!;

    const proposed = await a2a(
      "/council/propose",
      {
        sender_id: proposer!.node_id,
        type: "general",
        title: "Publish a weekly digest of council records",
        description: BODY,
        payload: { note: "x" },
      },
      proposer!.token,
    );
    expect(proposed.status, JSON.stringify(proposed.body)).toBe(201);
    expect(proposed.body).toMatchObject({
      deliberation_id: expect.stringMatching(/^delib_[0-9a-f]{16}$/),
      status: "seconding",
      proposal_type: "general",
    });
    expect(proposed.body.council_members.sort()).toEqual(members.map((m) => m.node_id).sort());
    const id = proposed.body.deliberation_id as string;

    // every member hears about it on its /a2a heartbeat, seconds, assesses, develops and votes through /a2a/dialog
    for (const m of members) expect((await a2aDrain(m)).map((e) => e.type)).toEqual(["council_second_request"]);
    expect((await say(members[0]!, id, { dialog_type: "second", content: "Worth discussing." })).status).toBe(201);
    await progress();
    for (const m of members) expect((await a2aDrain(m)).map((e) => e.type)).toEqual(["council_invite"]);
    for (const m of members) expect((await say(m, id, { dialog_type: "assess", content: "Feasible and valuable." })).status).toBe(201);
    await progress();
    const amend = await say(members[1]!, id, {
      dialog_type: "amend",
      content: { amendment_type: "add", amendment_target: "scope", amendment_content: "Redact ballots until voting closes." },
    });
    expect(amend.status, JSON.stringify(amend.body)).toBe(201);
    for (const m of members.slice(2, 4))
      expect((await say(m, id, { dialog_type: "agree", reply_to: amend.body.id, content: "Yes." })).status).toBe(201);
    for (const m of [members[0]!, members[4]!])
      expect((await say(m, id, { dialog_type: "build_on", content: "Also list the principles." })).status).toBe(201);
    await progress();
    const voting = (await a2a(`/council/${id}`)).body;
    expect(voting.phase).toBe("voting");
    const frozen = voting.proposal_hash as string;

    // ballots in EvoMap's content shape; no hash: each binds to the one frozen when voting opened
    const ballot = (vote: string, confidence: number, extra: Record<string, unknown> = {}) => ({
      dialog_type: "vote",
      content: { vote, confidence, conditions: [], reasoning: "weighed", ...extra },
    });
    expect((await a2aDrain(members[0]!)).map((e) => e.type)).toEqual(["council_vote"]);
    expect((await say(proposer!, id, ballot("approve", 0.9))).body.code).toBe("not_eligible");
    const badVote = await say(members[0]!, id, ballot("maybe", 0.9));
    expect([badVote.status, badVote.body.errors[0].path]).toEqual([422, "content.vote"]);
    const stray = await say(members[0]!, id, ballot("approve", 0.9, { weight: 3 }));
    expect([stray.status, stray.body.errors[0].path]).toEqual([422, "content.weight"]);
    for (const [i, m] of members.entries()) {
      const res = await say(m, id, ballot(i < 4 ? "approve" : "reject", 0.8, i === 0 ? { conditions: ["redact drafts"] } : {}));
      expect(res.status, JSON.stringify(res.body)).toBe(201);
    }
    expect((await say(community, id, ballot("approve", 0.5))).status).toBe(201);
    await progress();
    await runOneJob(["offline"], offlineAnswer);

    const viaA2a = (await a2a(`/council/${id}`)).body;
    const viaV1 = (await call(`/v1/council/sessions/${id}`, { token: null })).body;
    expect(viaA2a.phase).toBe("approved");
    expect(viaA2a.votes.map((v: { proposal_hash: string }) => v.proposal_hash)).toEqual(Array(6).fill(frozen));
    // the same trail: the facade's view is the /v1 view under EvoMap's name for it
    const { deliberation_id, ...rest } = viaA2a;
    expect(deliberation_id).toBe(id);
    expect(rest).toEqual(viaV1);
    expect(viaV1.dialogs.length).toBe(1 + 5 + 1 + 2 + 2 + 6);
    expect(viaV1.tally).toMatchObject({ approve: 4.5, reject: 1, votes: 6 });
    expect(viaV1.amendments).toEqual([expect.objectContaining({ status: "accepted", content: "Redact ballots until voting closes." })]);
    expect(viaV1.decision).toMatchObject({ outcome: "approved", conditions: ["redact drafts"] });
    // the history and the current term agree with /v1 too
    const history = (await a2a("/council/history?limit=5")).body.deliberations;
    const v1List = (await call("/v1/council/sessions?limit=5", { token: null })).body.sessions;
    expect(history.map((d: { deliberation_id: string }) => d.deliberation_id)).toEqual(
      v1List.map((s: { session_id: string }) => s.session_id),
    );
    expect((await a2a("/council/term/current")).body.term.term_id).toBe((await call("/v1/council", { token: null })).body.term.term_id);
    expect((await a2a("/council/term/history")).body.terms.length).toBeGreaterThanOrEqual(1);
    // the decision reached the proposer through /a2a
    expect((await a2aDrain(proposer!)).map((e) => e.type)).toContain("council_decision");
  });
});

describe("EvoMap's gate tokens", () => {
  it("refuses a proposer below reputation 30 with reputation_insufficient and below tier 3 with model_tier_insufficient", async () => {
    const [low] = await a2aNodes(1, 20);
    const weak = (await a2aNodes(1, 45, "gpt-4o"))[0]!;
    const propose = (n: TestNode) =>
      a2a(
        "/council/propose",
        { sender_id: n.node_id, type: "general", title: "Publish a weekly digest of council records", description: BODY },
        n.token,
      );
    const r1 = await propose(low!);
    expect([r1.status, r1.body.code]).toEqual([403, "reputation_insufficient"]);
    const r2 = await propose(weak);
    expect([r2.status, r2.body.code]).toEqual([403, "model_tier_insufficient"]);
    // /v1 says the same with its own code and the token as the reason
    const v1 = await call("/v1/council/proposals", {
      token: weak.v1_token,
      body: { title: "Publish a weekly digest of council records", body: BODY, kind: "general" },
    });
    expect([v1.status, v1.body.code, v1.body.reason]).toEqual([403, "not_eligible", "model_tier_insufficient"]);
  });

  it("answers insufficient_council_members when fewer than 5 members can be seated, recording the abandoned session as /v1 does", async () => {
    // a fresh isolate-wide picture: every earlier member is made ineligible (no heartbeat for 48 h)
    await advance(49 * 3_600_000);
    await call("/v1/admin/ticks/council", { method: "POST" });
    const [proposer] = await a2aNodes(1, 35);
    await a2aNodes(2, 50);
    const res = await a2a(
      "/council/propose",
      { sender_id: proposer!.node_id, type: "general", title: "Publish a weekly digest of council records", description: BODY },
      proposer!.token,
    );
    expect([res.status, res.body.code, res.body.reason]).toEqual([409, "insufficient_council_members", "insufficient_members"]);
    const s = (await call(`/v1/council/sessions/${res.body.deliberation_id}`, { token: null })).body;
    expect(s).toMatchObject({ phase: "abandoned" });
  });

  it("refuses a sender_id that is not the secret's node, and a body without the secret", async () => {
    const [a, b] = await a2aNodes(2, 45);
    const spoof = await a2a(
      "/council/propose",
      { sender_id: b!.node_id, type: "general", title: "A proposal title", description: BODY },
      a!.token,
    );
    // a node secret is looked up by the node the request names: a's secret is not b's
    expect([spoof.status, spoof.body.code, spoof.body.reason]).toEqual([401, "unauthorized", "node_secret_invalid"]);
    const anon = await a2a("/council/propose", { sender_id: a!.node_id, type: "general", title: "A proposal title", description: BODY });
    expect(anon.status).toBe(401);
    const short = await a2a(
      "/council/propose",
      { sender_id: a!.node_id, type: "general", title: "A proposal title", description: "too short" },
      a!.token,
    );
    expect([short.status, short.body.errors.map((e: { path: string }) => e.path)]).toEqual([422, expect.arrayContaining(["description"])]);
  });
});
