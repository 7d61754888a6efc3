import { createScheduledController } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../../../src/workers/index";
import { call } from "../../factories";
import { advance, council, dialog, propose, PROPOSAL, session, tick } from "../../factories/council-http";
import { drainEvents, heartbeat, type TestNode } from "../../factories/nodes";

const MIN = 60_000;
let setup: Awaited<ReturnType<typeof council>> | undefined;
let round = 0;

/** One council for the file (12 eligible nodes), a fresh proposer per test. */
async function fresh() {
  setup ??= await council(12, "dl");
  for (const m of setup.members) await heartbeat(m);
  const { proposer } = await council(0, `dl-p${round++}`);
  const res = await propose(proposer, { ...PROPOSAL, title: `${PROPOSAL.title} #${round}` });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  const sid = res.body.session_id as string;
  const s = await session(sid);
  const seated: TestNode[] = s.members
    .filter((m: { role: string }) => m.role !== "proposer")
    .map((m: { node_id: string }) => setup!.byId.get(m.node_id)!);
  return { sid, seated, proposer };
}

describe("deadlines, the debounced progress check and replacements", () => {
  it("tables a proposal nobody seconds within 30 minutes (the minute cron finds it)", async () => {
    const { sid, proposer } = await fresh();
    await advance(29 * MIN);
    await worker.scheduled(createScheduledController({ scheduledTime: Date.now(), cron: "* * * * *" }), env);
    expect((await session(sid)).phase).toBe("seconding");
    await advance(1 * MIN + 1_000);
    await worker.scheduled(createScheduledController({ scheduledTime: Date.now(), cron: "* * * * *" }), env);
    const s = await session(sid);
    expect(s).toMatchObject({ phase: "tabled", end_reason: "not_seconded" });
    void proposer;
  });

  it("runs the progress check on its own at most the debounce after dialog input (the session's alarm, no tick)", async () => {
    await call("/v1/config/council", { method: "PUT", body: { progress_debounce_ms: 300 } });
    const { sid, seated } = await fresh();
    expect((await dialog(seated[0]!, sid, { dialog_type: "second" })).status).toBe(201);
    const deadline = Date.now() + 15_000;
    let phase = "seconding";
    while (phase === "seconding" && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      phase = (await session(sid)).phase;
    }
    expect(phase).toBe("diverge");
    await call("/v1/config/council", { method: "PUT", body: {} });
  });

  it("replaces diverge non-responders after 5 minutes with fresh eligible nodes, who are invited; at most 2 rounds", async () => {
    const { sid, seated } = await fresh();
    await dialog(seated[0]!, sid, { dialog_type: "second" });
    await advance(11_000);
    await tick();
    expect((await session(sid)).phase).toBe("diverge");
    // seven answer, two stay silent
    for (const m of seated.slice(0, 7)) expect((await dialog(m, sid, { dialog_type: "assess", content: "Fine." })).status).toBe(201);
    for (const m of setup!.members) await heartbeat(m);
    await advance(5 * MIN);
    await tick();
    let s = await session(sid);
    expect(s.phase).toBe("diverge");
    expect(s.replacement_rounds).toBe(1);
    const replaced = s.members.filter((m: { replaced_by?: string }) => m.replaced_by);
    expect(replaced.map((m: { node_id: string }) => m.node_id).sort()).toEqual(
      seated
        .slice(7)
        .map((m) => m.node_id)
        .sort(),
    );
    const newcomers = replaced.map((m: { replaced_by: string }) => setup!.byId.get(m.replaced_by)!);
    for (const n of newcomers) {
      const invites = (await drainEvents(n)).filter((e) => e.type === "council_invite" && e.payload.session_id === sid);
      expect(invites).toEqual([
        expect.objectContaining({ payload: expect.objectContaining({ replacement_for: expect.any(String), round: 1 }) }),
      ]);
    }
    // a replaced member is out
    expect((await dialog(seated[8]!, sid, { dialog_type: "assess", content: "Late." })).status).toBe(403);
    // one replacement answers; after the second round the session goes on with those who answered
    expect((await dialog(newcomers[0]!, sid, { dialog_type: "assess", content: "Joined." })).status).toBe(201);
    for (const m of setup!.members) await heartbeat(m);
    await advance(5 * MIN);
    await tick();
    s = await session(sid);
    expect(s.replacement_rounds).toBe(2);
    await advance(5 * MIN);
    await tick();
    s = await session(sid);
    expect(s.phase).toBe("challenge");
    expect(s.members.filter((m: { role: string; replaced_by?: string }) => m.role === "devils_advocate" && !m.replaced_by)).toHaveLength(1);
  });

  it("abandons a vote nobody cast within 10 minutes (no_votes) and lets the proposer propose again", async () => {
    const { sid, seated, proposer } = await fresh();
    await dialog(seated[0]!, sid, { dialog_type: "second" });
    await advance(11_000);
    await tick();
    for (const m of seated) await dialog(m, sid, { dialog_type: "assess", content: "ok" });
    await advance(11_000);
    await tick();
    await advance(10 * MIN);
    await tick();
    expect((await session(sid)).phase).toBe("voting");
    await advance(10 * MIN);
    await tick();
    expect(await session(sid)).toMatchObject({ phase: "abandoned", end_reason: "no_votes" });
    expect((await call(`/v1/council/sessions/${sid}`, { token: null })).body.tally).toEqual({
      approve: 0,
      reject: 0,
      revise: 0,
      total: 0,
      votes: 0,
    });
    await heartbeat(proposer);
    expect((await propose(proposer, { ...PROPOSAL, title: `${PROPOSAL.title} again` })).status).toBe(201);
  });
});
