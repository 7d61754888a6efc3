import { describe, expect, it } from "vitest";
import { call, createRunner } from "../../factories";
import { advance, dialog, progress, runOneJob, session, sessionOpener, tick, toVoting } from "../../factories/council-http";

const open = sessionOpener("cc");

/** A session in its voting phase with 9 members. */
async function voting() {
  const { sid, seated } = await open();
  const s = await toVoting(sid, seated);
  return { sid, seated, hash: s.proposal_hash as string, devil: s.devils_advocate as string };
}

const check = (sid: string) => call(`/v1/council/sessions/${sid}/check`, { method: "POST" });

describe("racing ballots and checks", () => {
  it("9 members voting at once, with checks and ticks racing them, yield exactly one tally and one synthesis job", async () => {
    const { sid, seated, hash } = await voting();
    const ballots = seated.map((m, i) =>
      dialog(m, sid, { dialog_type: "vote", vote: i < 6 ? "approve" : "reject", confidence: 0.8, proposal_hash: hash }),
    );
    const racing = [check(sid), check(sid), check(sid), tick()];
    const results = await Promise.all(ballots);
    await Promise.all(racing);
    expect(results.map((r) => r.status)).toEqual(Array(9).fill(201));
    await advance(11_000);
    await Promise.all([check(sid), check(sid), check(sid), check(sid), tick(), tick()]);
    const s = await session(sid);
    expect(s.phase).toBe("converging");
    expect(s.tally).toEqual({ approve: 6, reject: 3, revise: 0, total: 9, votes: 9 });
    expect((await call(`/v1/events?type=council.tallied&subject=${sid}`)).body.events).toHaveLength(1);
    const jobs = await call(`/v1/events?type=job.queued`);
    expect(jobs.body.events.filter((e: { payload: { owner: { id: string } } }) => e.payload.owner.id === sid)).toHaveLength(1);
  });

  it("accepts one of three simultaneous ballots from the same node; the others are 409", async () => {
    const { sid, seated, hash } = await voting();
    const same = await Promise.all(
      ["approve", "reject", "revise"].map((vote) =>
        dialog(seated[0]!, sid, { dialog_type: "vote", vote, confidence: 0.5, proposal_hash: hash }),
      ),
    );
    expect(same.map((r) => r.status).sort()).toEqual([201, 409, 409]);
    expect(same.filter((r) => r.status === 409).every((r) => r.body.code === "already_voted")).toBe(true);
    expect((await session(sid)).votes).toHaveLength(1);
  });

  it("refuses a dialog carrying another type's fields (422) and records nothing for it", async () => {
    const { sid, seated, hash } = await voting();
    const before = (await session(sid)).dialogs.length;
    const mixed = await dialog(seated[0]!, sid, {
      dialog_type: "vote",
      vote: "approve",
      confidence: 0.5,
      proposal_hash: hash,
      amendment_type: "add",
    });
    expect([mixed.status, mixed.body.errors.map((e: { path: string }) => e.path)]).toEqual([422, ["amendment_type"]]);
    const assess = await dialog(seated[0]!, sid, { dialog_type: "develop", content: "x", vote: "approve" });
    expect([assess.status, assess.body.errors.map((e: { path: string }) => e.path)]).toEqual([422, ["vote"]]);
    expect((await session(sid)).dialogs).toHaveLength(before);
  });

  it("takes a model's synthesis as the consensus (synthesis_source model) when a real runtime answers", async () => {
    await call("/v1/config/council", { method: "PUT", body: { synthesis_runtime: "claude" } });
    const { sid, seated, hash, devil } = await voting();
    for (const m of seated) await dialog(m, sid, { dialog_type: "vote", vote: "approve", confidence: 0.95, proposal_hash: hash });
    await progress();
    const runner = await createRunner("synth");
    const job = await runOneJob(
      ["claude"],
      () => ({
        text: `The council approves. ${devil}'s concern is addressed by publishing after each vote closes.`,
        runtime: "claude",
        model: "claude-test",
      }),
      runner,
    );
    expect(job.payload.runtime).toBe("claude");
    const s = await session(sid);
    expect(s.decision).toMatchObject({ outcome: "approved", synthesis_source: "model", consensus: expect.stringContaining(devil) });
    expect(s.decision.synthesis_note).toBeUndefined();
    await call("/v1/config/council", { method: "PUT", body: {} });
  });

  it("falls back to the template when no runner answers the synthesis within 15 minutes", async () => {
    await call("/v1/config/council", { method: "PUT", body: { synthesis_runtime: "grok" } }); // no runner offers grok here
    const { sid, seated, hash } = await voting();
    for (const m of seated) await dialog(m, sid, { dialog_type: "vote", vote: "approve", confidence: 0.9, proposal_hash: hash });
    await progress();
    await advance(14 * 60_000);
    await tick();
    expect((await session(sid)).phase).toBe("converging");
    await advance(60_000);
    await tick();
    const s = await session(sid);
    expect(s.decision).toMatchObject({ outcome: "approved", synthesis_source: "template", synthesis_note: "synthesis_timeout" });
    await call("/v1/config/council", { method: "PUT", body: {} });
  });
});
