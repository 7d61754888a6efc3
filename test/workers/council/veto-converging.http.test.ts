import { describe, expect, it } from "vitest";
import { call, createOperator, createRunner } from "../../factories";
import { advance, dialog, progress, runOneJob, session, sessionOpener, tick, toVoting } from "../../factories/council-http";

// A veto cast while the council waits for its synthesis, the synthesis answering during the veto,
// and the veto lapsing unratified: the session must go on to its decision, not sit in converging.

const open = sessionOpener("vc");

/** A session whose ballots are in and whose synthesis job (claude: no runner takes it unasked) is pending. */
async function converging() {
  const { sid, seated } = await open();
  let s = await toVoting(sid, seated);
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
    const admin = await createOperator("admin", "vc-admin");
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
