import { describe, expect, it } from "vitest";
import { nextCheckAt } from "../../../src/council/machine";
import { MINUTE, HOUR } from "../../../src/council/rules";
import { candidate, Driver, nodeId, sessionState, T0 } from "../../factories/council";

const assess = (content = "Feasible and useful; low risk.") => ({ dialog_type: "assess" as const, content });

/** Seconded and moved into diverge at minute 1. */
function inDiverge(memberCount = 5) {
  const d = new Driver(sessionState({ memberCount }));
  d.post(2, { dialog_type: "second" });
  d.at(1).check();
  expect(d.state.phase).toBe("diverge");
  return d;
}

/** Everyone assessed and challenged; voting open at minute 3. */
function inVoting(memberCount = 5) {
  const d = inDiverge(memberCount);
  for (let i = 1; i <= memberCount; i++) d.post(i, assess());
  d.at(2).check();
  for (let i = 1; i <= memberCount; i++) d.post(i, { dialog_type: "develop", content: "Let us also publish the tally." });
  d.at(3).check();
  expect(d.state.phase).toBe("voting");
  return d;
}

describe("seconding", () => {
  it("moves to diverge on a member's second at the next check and invites every member", () => {
    const d = new Driver(sessionState());
    expect(d.post(3, { dialog_type: "second", content: "Worth discussing" }).ok).toBe(true);
    expect(d.state.phase).toBe("seconding"); // input only records; the check moves the phase
    expect(d.state.progress_due_at).toBe(new Date(T0 + 10_000).toISOString());
    d.at(0.2).check();
    expect(d.state.phase).toBe("diverge");
    const invites = d.effectsOf("notify").filter((n) => n.type === "council_invite");
    expect(invites).toHaveLength(1);
    expect(invites[0]!.to).toEqual([1, 2, 3, 4, 5].map(nodeId));
    expect(d.effectsOf("term_counts")).toEqual([{ kind: "term_counts", requests: [1, 2, 3, 4, 5].map(nodeId), responses: [] }]);
  });

  it("refuses a second from the proposer or from a node outside the session", () => {
    const d = new Driver(sessionState());
    expect(d.post(0, { dialog_type: "second" })).toMatchObject({ ok: false, code: "not_eligible" });
    expect(d.post(77, { dialog_type: "second" })).toMatchObject({ ok: false, code: "not_eligible" });
  });

  it("tables a proposal nobody seconds within 30 minutes and resets its project to proposed", () => {
    const d = new Driver(sessionState({ kind: "project" }));
    d.at(29.9).check();
    expect(d.state.phase).toBe("seconding");
    d.at(30).check();
    expect(d.state).toMatchObject({ phase: "tabled", end_reason: "not_seconded" });
    expect(d.effects).toContainEqual({ kind: "proposal_status", status: "tabled" });
    expect(d.effects).toContainEqual({ kind: "project_status", to: "proposed", from: ["council_review"] });
  });

  it("answers wrong_phase for a dialog type the phase does not take, and for any dialog once it ended", () => {
    const d = new Driver(sessionState());
    expect(d.post(1, assess())).toMatchObject({ ok: false, code: "wrong_phase" });
    d.at(31).check();
    expect(d.post(1, { dialog_type: "second" })).toMatchObject({ ok: false, code: "wrong_phase" });
  });
});

describe("diverge", () => {
  it("moves to challenge once every member has assessed", () => {
    const d = inDiverge();
    for (let i = 1; i <= 4; i++) d.post(i, assess());
    d.at(2).check();
    expect(d.state.phase).toBe("diverge");
    d.post(5, assess());
    d.at(2.1).check();
    expect(d.state.phase).toBe("challenge");
  });

  it("replaces non-responders after 5 minutes, at most 2 rounds, then goes on with whoever answered", () => {
    const d = inDiverge();
    d.post(1, assess());
    d.post(2, assess());
    const pool = [10, 11, 12, 13, 14, 15, 16].map((i) => candidate(i, { reputation: 60 + i }));
    d.at(5.9).check(pool);
    expect(d.state.replacement_rounds).toBe(0);
    d.at(6).check(pool);
    expect(d.state.replacement_rounds).toBe(1);
    // the three silent members (3, 4, 5) give way to the three highest-reputation candidates
    expect(d.state.members.filter((m) => m.replaced_by).map((m) => [m.node_id, m.replaced_by])).toEqual([
      [nodeId(3), nodeId(16)],
      [nodeId(4), nodeId(15)],
      [nodeId(5), nodeId(14)],
    ]);
    const invites = d.effectsOf("notify").filter((n) => n.type === "council_invite");
    expect(invites.map((n) => n.to[0])).toEqual([16, 15, 14].map(nodeId));
    expect(invites[0]!.payload).toMatchObject({ replacement_for: nodeId(3), round: 1 });
    // a replaced member can no longer take part
    expect(d.post(3, assess())).toMatchObject({ ok: false, code: "not_eligible" });
    d.post(16, assess());
    d.at(11).check(pool);
    expect(d.state.replacement_rounds).toBe(2);
    expect(d.state.members.filter((m) => !m.replaced_by).map((m) => m.node_id)).toEqual([1, 2, 16, 13, 12].map(nodeId));
    d.at(16).check(pool);
    expect(d.state.phase).toBe("challenge");
    expect(d.effectsOf("feed").find((f) => f.type === "council.phase_changed")!.payload).toMatchObject({
      unresponsive: [13, 12].map(nodeId),
    });
  });

  it("abandons when replacement rounds are exhausted and nobody ever answered", () => {
    const d = new Driver(
      sessionState({ phase: "diverge", seconded: { by: null, at: new Date(T0).toISOString(), auto: true, reason: "reputation" } }),
    );
    d.state.deadlines.diverge = new Date(T0 + 5 * MINUTE).toISOString();
    d.at(5).check([candidate(20), candidate(21)]);
    expect(d.state.replacement_rounds).toBe(1);
    d.at(10).check([]); // the pool has run dry
    expect(d.state).toMatchObject({ phase: "abandoned", end_reason: "replacements_exhausted" });
  });

  it("keeps exactly one devil's advocate when the devil's advocate is replaced", () => {
    const d = inDiverge();
    for (const i of [2, 3, 4, 5]) d.post(i, assess());
    d.at(6).check([candidate(30)]);
    const active = d.state.members.filter((m) => !m.replaced_by);
    expect(active.filter((m) => m.role === "devils_advocate").map((m) => m.node_id)).toEqual([nodeId(30)]);
  });
});

describe("challenge, amendments and the proposal hash", () => {
  it("accepts an amendment more members agree with than challenge, hashes the amended text and sends the list to voters", () => {
    const d = inDiverge();
    for (let i = 1; i <= 5; i++) d.post(i, assess());
    d.at(2).check();
    const missing = d.post(1, { dialog_type: "amend", amendment_type: "add", amendment_target: "scope" });
    expect(missing).toMatchObject({ ok: false, code: "validation_failed" });
    d.post(1, {
      dialog_type: "amend",
      amendment_type: "add",
      amendment_target: "scope",
      amendment_content: "Include dissenting opinions.",
    });
    d.post(2, {
      dialog_type: "amend",
      amendment_type: "remove",
      amendment_target: "weekly",
      amendment_content: "Publish monthly instead.",
    });
    const [a1, a2] = d.state.amendments;
    d.post(3, { dialog_type: "agree", reply_to: a1!.amendment_id, content: "+1" });
    d.post(4, { dialog_type: "agree", reply_to: a1!.amendment_id, content: "+1" });
    d.post(5, { dialog_type: "challenge", reply_to: a1!.amendment_id, content: "Too long" });
    d.post(3, { dialog_type: "challenge", reply_to: a2!.amendment_id, content: "Weekly is fine" });
    d.post(1, { dialog_type: "agree", reply_to: a1!.amendment_id, content: "(own amendment: not counted)" });
    expect(d.post(4, { dialog_type: "agree", reply_to: "dlg_nonexistent0000" })).toMatchObject({ ok: false, code: "validation_failed" });
    d.at(3).check();
    expect(d.state.phase).toBe("voting");
    expect(d.state.amendments.map((a) => a.status)).toEqual(["accepted", "rejected"]);
    const open = d.effectsOf("open_voting")[0]!;
    expect(open.members).toEqual([1, 2, 3, 4, 5].map((i) => ({ node_id: nodeId(i), weight: 1 })));
    expect(open.community).toMatchObject({ weight: 0.5, min_reputation: 20, min_tier: 1 });
    expect(open.community.exclude).toContain(nodeId(0));
    expect(open.payload).toMatchObject({
      proposal_hash: d.state.proposal_hash,
      amendments: [{ status: "accepted" }, { status: "rejected" }],
    });
    expect(d.state.proposal_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(d.state.proposal_hash).not.toBe(inVoting().state.proposal_hash); // the same proposal without the amendment
  });

  it("closes challenge after 10 minutes even if not everyone posted", () => {
    const d = inDiverge();
    for (let i = 1; i <= 5; i++) d.post(i, assess());
    d.at(2).check();
    d.post(1, { dialog_type: "challenge", content: "What about cost?" });
    d.at(11.9).check();
    expect(d.state.phase).toBe("challenge");
    d.at(12).check();
    expect(d.state.phase).toBe("voting");
  });
});

describe("voting", () => {
  it("refuses the proposer, nodes outside the electorate, a stale hash and a second ballot", () => {
    const d = inVoting();
    expect(d.vote(0, "approve")).toMatchObject({ ok: false, code: "not_eligible" });
    expect(d.post(40, { dialog_type: "vote", vote: "approve", confidence: 1, proposal_hash: d.state.proposal_hash })).toMatchObject({
      ok: false,
      code: "not_eligible",
    });
    expect(d.vote(1, "approve", 0.9, { proposal_hash: "0".repeat(64) })).toMatchObject({ ok: false, code: "stale_proposal" });
    expect(d.vote(1, "approve")).toMatchObject({ ok: true });
    expect(d.vote(1, "reject")).toMatchObject({ ok: false, code: "already_voted" });
    expect(d.votes).toHaveLength(1);
  });

  it("closes when every member voted, tallies once and asks for a synthesis", () => {
    const d = inVoting();
    d.post(
      40,
      { dialog_type: "vote", vote: "approve", confidence: 1, proposal_hash: d.state.proposal_hash },
      { voter: { kind: "community", weight: 0.5 } },
    );
    for (const i of [1, 2, 3]) d.vote(i, "approve", 0.9);
    d.vote(4, "reject", 0.6);
    d.at(4).check();
    expect(d.state.phase).toBe("voting");
    d.vote(5, "revise", 0.5, { conditions: ["publish a summary"] });
    d.at(4.5).check();
    expect(d.state.phase).toBe("converging");
    expect(d.state.pending).toMatchObject({ outcome: "approved", tally: { approve: 3.5, reject: 1, revise: 1, total: 5.5, votes: 6 } });
    expect(d.effectsOf("feed").filter((f) => f.type === "council.tallied")).toEqual([
      expect.objectContaining({ dedupe: `council:tally:${d.state.session_id}` }),
    ]);
    const [job] = d.effectsOf("submit_job");
    expect(job).toMatchObject({ purpose: "synthesis", runtime: "claude", job_id: d.state.synthesis!.job_id });
    expect(job!.prompt).toContain(`devil's advocate is ${nodeId(1)}`);
    // nothing more happens until the job answers or times out
    d.at(10).check();
    expect(d.state.phase).toBe("converging");
    expect(d.effects).toEqual([]);
  });

  it("abandons with no_votes when the 10 minutes pass without a ballot", () => {
    const d = inVoting();
    d.at(12.9).check();
    expect(d.state.phase).toBe("voting");
    d.at(13).check();
    expect(d.state).toMatchObject({ phase: "abandoned", end_reason: "no_votes" });
  });
});

describe("convergence", () => {
  function approvedVotes(confidence = 0.9) {
    const d = inVoting();
    for (let i = 1; i <= 5; i++) d.vote(i, "approve", confidence, { conditions: i === 2 ? ["redact drafts"] : [] });
    d.at(4).check();
    expect(d.state.phase).toBe("converging");
    return d;
  }

  it("takes a model's consensus, decides approved and carries it out: notifications, the swarm task and (confidence ≥ 0.7) a principle", () => {
    const d = approvedVotes(0.9);
    d.at(5).jobEnded("completed", { text: `Approved. ${nodeId(1)}'s concern about leaks is answered by redaction.`, runtime: "claude" });
    expect(d.state.phase).toBe("approved");
    expect(d.state.decision).toMatchObject({
      outcome: "approved",
      confidence: 0.9,
      synthesis_source: "model",
      conditions: ["redact drafts"],
      ethics: {
        rules: [
          { rule: "security_scan", passed: true },
          { rule: "denied_terms", passed: true },
        ],
        model: { status: "off" },
      },
    });
    expect(d.state.decision!.quality_score).toBeGreaterThan(0.9);
    const notes = d.effectsOf("notify");
    expect(notes.map((n) => [n.type, n.to])).toEqual([
      ["council_decision", [nodeId(0)]],
      ["council_decision_notification", [1, 2, 3, 4, 5].map(nodeId)],
    ]);
    expect(notes[0]!.payload).toMatchObject({
      outcome: "approved",
      quality_score: d.state.decision!.quality_score,
      consensus: expect.stringContaining("redaction"),
      conditions: ["redact drafts"],
    });
    expect(d.effects).toContainEqual({ kind: "execute_decision" });
    expect(d.effects).toContainEqual({ kind: "term_sample" });
    // a repeated notice of the same job changes nothing
    const again = d.jobEnded("completed", { text: "other", runtime: "claude" }, d.state.synthesis!.job_id);
    expect(again).toMatchObject({ ok: true, changed: false, effects: [] });
  });

  it("appends the devil's advocate's objections when the model's text does not name them", () => {
    const d = inDiverge();
    for (let i = 1; i <= 5; i++) d.post(i, assess(i === 1 ? "This will leak draft votes." : undefined));
    d.at(2).check();
    for (let i = 1; i <= 5; i++) d.post(i, { dialog_type: "develop", content: "ok" });
    d.at(3).check();
    for (let i = 1; i <= 5; i++) d.vote(i, "approve", 0.8);
    d.at(4).check();
    d.jobEnded("completed", { text: "Approved by all.", runtime: "claude" });
    expect(d.state.decision).toMatchObject({ synthesis_source: "model", synthesis_note: "devils_advocate_section_appended" });
    expect(d.state.decision!.consensus).toContain(`Devil's advocate ${nodeId(1)} objected:`);
    expect(d.state.decision!.consensus).toContain("This will leak draft votes.");
  });

  it("falls back to the template, saying why, when the synthesis times out (15 min), fails, or ran offline", () => {
    const timedOut = approvedVotes();
    timedOut.at(18.9).check();
    expect(timedOut.state.phase).toBe("converging");
    timedOut.at(19).check();
    expect(timedOut.state.decision).toMatchObject({ synthesis_source: "template", synthesis_note: "synthesis_timeout" });
    expect(timedOut.state.decision!.consensus).toMatch(/^Decision: approved\. Weighted votes: approve 5, reject 0, revise 0/);
    // the job's late answer is ignored
    expect(timedOut.jobEnded("completed", { text: "late", runtime: "claude" }, timedOut.state.synthesis!.job_id)).toMatchObject({
      changed: false,
    });

    const failed = approvedVotes();
    failed.jobEnded("failed", undefined);
    expect(failed.state.decision).toMatchObject({ synthesis_source: "template", synthesis_note: "synthesis_job_failed" });

    const offline = approvedVotes();
    offline.jobEnded("completed", { text: "[offline runtime] You write the consensus (sha256:abc)", runtime: "offline" });
    expect(offline.state.decision).toMatchObject({ synthesis_source: "template", synthesis_note: "synthesis_offline_runtime" });
  });

  it("writes the template at once when synthesis is off", () => {
    const d = inVoting();
    d.config = { ...d.config, synthesis: "off" };
    for (let i = 1; i <= 5; i++) d.vote(i, "reject", 0.7);
    d.at(4).check();
    expect(d.state.phase).toBe("rejected");
    expect(d.state.decision).toMatchObject({ outcome: "rejected", synthesis_source: "template", synthesis_note: "synthesis_off" });
    expect(d.effects).not.toContainEqual({ kind: "execute_decision" });
  });

  it("turns an approval into revise when an accepted amendment fails the ethics rules, and records why", () => {
    const d = inDiverge();
    for (let i = 1; i <= 5; i++) d.post(i, assess());
    d.at(2).check();
    d.post(2, {
      dialog_type: "amend",
      amendment_type: "add",
      amendment_target: "tooling",
      amendment_content: "Ship a ransomware sample for testing.",
    });
    const a = d.state.amendments[0]!;
    for (const i of [3, 4]) d.post(i, { dialog_type: "agree", reply_to: a.amendment_id });
    d.at(13).check();
    for (let i = 1; i <= 5; i++) d.vote(i, "approve", 0.9);
    d.at(14).check();
    d.jobEnded("completed", { text: `Fine. ${nodeId(1)} had no objections.`, runtime: "claude" });
    expect(d.state.phase).toBe("revise");
    expect(d.state.decision).toMatchObject({
      outcome: "revise",
      tallied_outcome: "approved",
      ethics: { revised_because: "ethics_rule:denied_terms:ransomware" },
    });
    expect(d.effects).not.toContainEqual({ kind: "execute_decision" });
  });

  it("asks a configured model ethics check and fails closed when its answer does not parse", () => {
    const d = inVoting();
    d.config = { ...d.config, ethics_model: "model" };
    for (let i = 1; i <= 5; i++) d.vote(i, "approve", 0.9);
    d.at(4).check();
    d.jobEnded("completed", { text: `Consensus naming ${nodeId(1)}.`, runtime: "claude" });
    expect(d.state.phase).toBe("converging");
    expect(d.effectsOf("submit_job")).toEqual([expect.objectContaining({ purpose: "ethics", runtime: "claude" })]);
    d.jobEnded("completed", { text: "Looks fine to me!", runtime: "claude" });
    expect(d.state.decision).toMatchObject({
      outcome: "revise",
      ethics: { model: { status: "unavailable" }, revised_because: expect.stringMatching(/^ethics_model_unavailable:ethics_unparseable/) },
    });
  });

  it("passes a configured model ethics check that answers pass", () => {
    const d = inVoting();
    d.config = { ...d.config, ethics_model: "model" };
    for (let i = 1; i <= 5; i++) d.vote(i, "approve", 0.9);
    d.at(4).check();
    d.jobEnded("completed", { text: `Consensus naming ${nodeId(1)}.`, runtime: "claude" });
    d.jobEnded("completed", { text: '```json\n{"verdict":"pass","reason":"harmless"}\n```', runtime: "claude" });
    expect(d.state.decision).toMatchObject({ outcome: "approved", ethics: { model: { status: "passed", reason: "harmless" } } });
  });
});

describe("abandonment and the 1-hour rule", () => {
  it("abandons a session nobody answered within an hour of its start", () => {
    const d = new Driver(
      sessionState({ phase: "diverge", seconded: { by: null, at: new Date(T0).toISOString(), auto: true, reason: "reputation" } }),
    );
    d.state.deadlines.diverge = new Date(T0 + 90 * MINUTE).toISOString(); // e.g. windows restarted after a veto
    d.at(59).check();
    expect(d.state.phase).toBe("diverge");
    d.at(60).check();
    expect(d.state).toMatchObject({ phase: "abandoned", end_reason: "no_response" });
  });
});

describe("veto", () => {
  function approved() {
    const d = inVoting();
    d.config = { ...d.config, synthesis: "off" };
    for (let i = 1; i <= 5; i++) d.vote(i, "approve", 0.9);
    d.at(4).check();
    expect(d.state.phase).toBe("approved");
    return d;
  }

  it("takes effect at once, revokes executed effects, and lapses after 72 hours, restoring the decision and re-running its effects", () => {
    const d = approved();
    d.at(10).apply({ kind: "veto", by: "op_a", reason: "emergency" });
    expect(d.state.phase).toBe("vetoed");
    expect(d.state.veto).toMatchObject({
      by: "op_a",
      status: "pending_ratification",
      phase_before: "approved",
      ratify_by: new Date(T0 + 10 * MINUTE + 72 * HOUR).toISOString(),
    });
    expect(d.effects).toContainEqual({ kind: "revoke_decision" });
    expect(d.effects).toContainEqual({ kind: "proposal_status", status: "vetoed" });
    expect(d.effects).toContainEqual({ kind: "reputation", event: "vetoed" });
    expect(nextCheckAt(d.state)).toBe(d.state.veto!.ratify_by);
    d.at(10 + 72 * 60 - 1).check();
    expect(d.state.phase).toBe("vetoed");
    d.at(10 + 72 * 60).check();
    expect(d.state.phase).toBe("approved");
    expect(d.state.veto).toMatchObject({ status: "lapsed" });
    expect(d.effects).toContainEqual({ kind: "execute_decision" });
    expect(d.effects).toContainEqual({ kind: "proposal_status", status: "approved" });
    // the decision's credits run again (their ledger references make that a no-op) and the veto's charge is given back
    expect(d.effectsOf("reputation")).toEqual([
      { kind: "reputation", event: "veto_lapsed" },
      { kind: "reputation", event: "decided" },
    ]);
    expect(d.effectsOf("notify")[0]!.payload).toMatchObject({ outcome: "approved", restored_after_veto: true });
  });

  it("is ratified by a different admin within the window; the same admin is refused; a late ratification is wrong_phase", () => {
    const d = approved();
    d.at(10).apply({ kind: "veto", by: "op_a", reason: "emergency" });
    expect(d.apply({ kind: "ratify", by: "op_a" })).toMatchObject({ ok: false, code: "forbidden" });
    expect(d.apply({ kind: "ratify", by: "op_b" })).toMatchObject({ ok: true });
    expect(d.state.veto).toMatchObject({ status: "ratified", ratified_by: "op_b" });
    d.at(10 + 73 * 60).check();
    expect(d.state.phase).toBe("vetoed");

    const late = approved();
    late.at(10).apply({ kind: "veto", by: "op_a", reason: "emergency" });
    late.at(10 + 72 * 60);
    expect(late.apply({ kind: "ratify", by: "op_b" })).toMatchObject({ ok: false, code: "wrong_phase" });
  });

  it("interrupts a deliberation and, when it lapses, gives the interrupted phase its full window again", () => {
    const d = inVoting();
    d.at(5).apply({ kind: "veto", by: "op_a", reason: "stop" });
    expect(d.vote(1, "approve")).toMatchObject({ ok: false, code: "wrong_phase" });
    d.at(5 + 72 * 60).check();
    expect(d.state.phase).toBe("voting");
    expect(d.state.deadlines.voting).toBe(new Date(T0 + (15 + 72 * 60) * MINUTE).toISOString());
    expect(d.vote(1, "approve")).toMatchObject({ ok: true });
  });

  it("refuses a veto once one lapsed (409 veto_lapsed): the restored decision is final against vetoes, and changes nothing", () => {
    const d = approved();
    d.at(10).apply({ kind: "veto", by: "op_a", reason: "emergency" });
    d.at(10 + 72 * 60).check();
    expect(d.state.phase).toBe("approved");
    const before = structuredClone(d.state);
    for (const by of ["op_a", "op_b"]) {
      expect(d.at(11 + 72 * 60).apply({ kind: "veto", by, reason: "again" })).toMatchObject({ ok: false, code: "veto_lapsed" });
    }
    expect(d.state).toEqual(before);
    // the same holds for a veto that interrupted a deliberation: once lapsed, never again
    const mid = inVoting();
    mid.at(5).apply({ kind: "veto", by: "op_a", reason: "stop" });
    mid.at(5 + 72 * 60).check();
    expect(mid.state.phase).toBe("voting");
    expect(mid.apply({ kind: "veto", by: "op_a", reason: "stop again" })).toMatchObject({ ok: false, code: "veto_lapsed" });
  });

  it("asks the save to refuse the veto of a project session when the project has started", () => {
    const d = approved();
    d.state.kind = "project";
    d.state.project_id = "proj_0123456789abcdef";
    d.at(10).apply({ kind: "veto", by: "op_a", reason: "emergency" });
    expect(d.effects[0]).toEqual({ kind: "require_project_not_started" });
  });

  it("refuses to veto a tabled session or one already vetoed", () => {
    const d = new Driver(sessionState());
    d.at(31).check();
    expect(d.apply({ kind: "veto", by: "op_a", reason: "x" })).toMatchObject({ ok: false, code: "wrong_phase" });
    const v = approved();
    v.apply({ kind: "veto", by: "op_a", reason: "x" });
    expect(v.apply({ kind: "veto", by: "op_b", reason: "y" })).toMatchObject({ ok: false, code: "wrong_phase" });
  });
});
