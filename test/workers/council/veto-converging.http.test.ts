import { describe, expect, it } from "vitest";
import { call, createOperator, createRunner } from "../../factories";
import { advance, council, dialog, progress, propose, PROPOSAL, runOneJob, session, tick } from "../../factories/council-http";
import { heartbeat, type TestNode } from "../../factories/nodes";

// A veto cast while the council waits for its synthesis, the synthesis answering during the veto,
// and the veto lapsing unratified: the session must go on to its decision, not sit in converging.

let setup: Awaited<ReturnType<typeof council>> | undefined;
let round = 0;

/** A session whose ballots are in and whose synthesis job (claude: no runner takes it unasked) is pending. */
async function converging() {
  setup ??= await council(11, "vc");
  for (const m of setup.members) await heartbeat(m);
  const { proposer } = await council(0, `vc-p${round++}`);
  const res = await propose(proposer, { ...PROPOSAL, title: `${PROPOSAL.title} (${round})` });
  expect(res.status).toBe(201);
  const sid = res.body.session_id as string;
  let s = await session(sid);
  const seated: TestNode[] = s.members
    .filter((m: { role: string }) => m.role !== "proposer")
    .map((m: { node_id: string }) => setup!.byId.get(m.node_id)!);
  await dialog(seated[0]!, sid, { dialog_type: "second" });
  await progress();
  for (const m of seated) await dialog(m, sid, { dialog_type: "assess", content: `View of ${m.node_id}` });
  await progress();
  for (const m of seated) await dialog(m, sid, { dialog_type: "develop", content: "ok" });
  await progress();
  s = await session(sid);
  expect(s.phase).toBe("voting");
  for (const m of seated)
    expect((await dialog(m, sid, { dialog_type: "vote", vote: "approve", confidence: 0.9, proposal_hash: s.proposal_hash })).status).toBe(
      201,
    );
  await progress();
  s = await session(sid);
  expect(s.phase).toBe("converging");
  expect(s.synthesis).toMatchObject({ status: "pending" });
  return { sid };
}

describe("a veto that lapses while the council was converging", () => {
  it("reaches the decision after the lapse when the synthesis answered during the veto", async () => {
    await call("/v1/config/council", { method: "PUT", body: { synthesis_runtime: "claude" } });
    const { sid } = await converging();
    const admin = await createOperator("admin", `vc-admin-${round}`);
    const vetoed = await call(`/v1/council/sessions/${sid}/veto`, { token: admin, body: { reason: "Hold while we look" } });
    expect([vetoed.status, vetoed.body.phase, vetoed.body.veto.phase_before]).toEqual([200, "vetoed", "converging"]);

    // The synthesis answers while the session is vetoed.
    await runOneJob(
      ["claude"],
      () => ({ text: "The council approves the digest.", runtime: "claude", model: "claude-test" }),
      await createRunner("vc-synth"),
    );
    expect((await session(sid)).synthesis).toMatchObject({ status: "done", source: "model" });

    // Nobody ratifies: the veto lapses and the interrupted convergence resumes.
    await advance(72 * 3_600_000 + 1_000);
    await tick();
    await advance(60_000);
    await tick();
    const s = await session(sid);
    expect(s.veto).toMatchObject({ status: "lapsed" });
    expect(s.phase).toBe("approved");
    expect(s.decision).toMatchObject({
      outcome: "approved",
      synthesis_source: "model",
      consensus: expect.stringContaining("The council approves the digest."),
    });
    expect((await call(`/v1/council/proposals/${s.proposal_id}`, { token: null })).body.status).toBe("approved");
    await call("/v1/config/council", { method: "PUT", body: {} });
  });
});
