import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { readCouncilConfigCached } from "../../../src/council/config";
import { jobs } from "../../../src/db/schema";
import { call, createRunner } from "../../factories";
import { dialog, progress, propose, PROPOSAL, runOneJob, session } from "../../factories/council-http";
import { eligibleNode, heartbeat, type TestNode } from "../../factories/nodes";
import { leaseOnce } from "../../factories/runner-protocol";

let seq = 0;
// Storage (and the council term) is shared by the tests of a file: every node any test made.
const known = new Map<string, TestNode>();

async function members(n: number) {
  for (let i = 0; i < n; i++) {
    const m = await eligibleNode(`mw-m${seq++}`, 50);
    known.set(m.node_id, m);
  }
}

const put = async (section: string, body: Record<string, unknown>) => {
  const res = await call(`/v1/config/${section}`, { method: "PUT", body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
};

/** A runner that offered `runtimes` at lease, once the Worker has recorded them (off the lease's response path). */
async function runnerOffering(runtimes: string[]) {
  const runner = await createRunner(`mw-runner-${seq++}`);
  expect((await leaseOnce(runner.token, { runtimes, capacity: 1 })).status).toBe(200);
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const offered = (await call("/v1/config/model_work")).body.offered_runtimes as string[];
    if (runtimes.every((r) => offered.includes(r))) return runner;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`the runtimes ${runtimes.join(", ")} were never recorded`);
}

const titled = (t: string) => ({ ...PROPOSAL, title: `${PROPOSAL.title} (${t})` });

/** A proposer whose standing seconds its own proposal (reputation ≥ 60). */
async function proposer() {
  const p = await eligibleNode(`mw-p${seq++}`, 65);
  known.set(p.node_id, p);
  return p;
}

/** From diverge to the end of voting: every seated member assesses, develops and approves. */
async function deliberateAndApprove(sid: string) {
  let s = await session(sid);
  expect(s.phase).toBe("diverge");
  const seated = s.members.filter((m: { role: string }) => m.role !== "proposer").map((m: { node_id: string }) => known.get(m.node_id)!);
  for (const m of seated) await heartbeat(m);
  for (const m of seated) expect((await dialog(m, sid, { dialog_type: "assess", content: "Sound." })).status).toBe(201);
  await progress();
  for (const m of seated) expect((await dialog(m, sid, { dialog_type: "develop", content: "Ship it." })).status).toBe(201);
  await progress();
  s = await session(sid);
  expect(s.phase).toBe("voting");
  for (const m of seated) {
    const res = await dialog(m, sid, { dialog_type: "vote", vote: "approve", confidence: 0.9, proposal_hash: s.proposal_hash });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
  await progress();
}

const jobsOwnedBy = (id: string) => getDb(env.DB).select({ id: jobs.id }).from(jobs).where(eq(jobs.ownerId, id)).all();

describe("model_work: one setting turns the council's model work on", () => {
  it("with model_work unset, changes nothing and the session view says no stage ran on a model, and why", async () => {
    await members(9);
    expect(await put("model_work", {})).toEqual({ offered_runtimes: [] });
    const council = await call("/v1/config/council");
    expect(council.body).toMatchObject({
      prescreen: "off",
      synthesis: "model",
      synthesis_runtime: "offline",
      ethics_model: "off",
      stored: {},
      stages: {
        prescreen: { on_model: false, set_by: "default", fell_back_because: "model_work_unset" },
        synthesis: { on_model: false, set_by: "default", runtime: "offline", fell_back_because: "model_work_unset" },
        ethics: { on_model: false, set_by: "default", fell_back_because: "model_work_unset" },
      },
    });

    const res = await propose(await proposer(), titled("unset"));
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const p = await call(`/v1/council/proposals/${res.body.proposal_id}`, { token: null });
    expect(p.body.prescreen).toEqual({ mode: "off", status: "skipped", source: "off", fell_back_because: "model_work_unset" });
    expect((await session(res.body.session_id)).model_work).toEqual({
      prescreen: { status: "done", on_model: false, fell_back_because: "model_work_unset" },
      synthesis: { status: "not_reached", on_model: false },
      ethics: { status: "not_reached", on_model: false },
    });
  });

  it("refuses model_work on offline (it judges nothing) and unknown keys, storing nothing", async () => {
    for (const body of [{ runtime: "offline" }, { runtime: "gpt" }, { runtime: "claude", models: "x" }]) {
      const res = await call("/v1/config/model_work", { method: "PUT", body });
      expect(res.status, JSON.stringify(body)).toBe(422);
    }
    expect((await call("/v1/config/model_work")).body).toEqual({ offered_runtimes: [] });
  });

  it("with model_work naming a runtime no live runner offers, every stage falls back saying runtime_not_offered, and no job is queued", async () => {
    await put("model_work", { runtime: "codex" });
    const council = (await call("/v1/config/council")).body;
    expect(council).toMatchObject({ prescreen: "off", synthesis: "off", ethics_model: "off" });
    for (const stage of ["prescreen", "synthesis", "ethics"]) {
      expect(council.stages[stage]).toEqual({
        on_model: false,
        set_by: "model_work",
        fell_back_because: "runtime_not_offered",
        wanted_runtime: "codex",
      });
    }

    // The proposal is not held for a prescreen nobody would run (it would fail closed after 30 min).
    const res = await propose(await proposer(), titled("not offered"));
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const sid = res.body.session_id as string;
    expect((await call(`/v1/council/proposals/${res.body.proposal_id}`, { token: null })).body.prescreen).toMatchObject({
      mode: "off",
      fell_back_because: "runtime_not_offered",
      wanted_runtime: "codex",
    });

    await deliberateAndApprove(sid);
    const s = await session(sid);
    expect(s.phase).toBe("approved");
    expect(s.decision).toMatchObject({
      synthesis_source: "template",
      synthesis_note: "synthesis_runtime_not_offered",
      ethics: { model: { status: "off" } },
    });
    const notOffered = { on_model: false, fell_back_because: "runtime_not_offered", wanted_runtime: "codex" };
    expect(s.model_work).toEqual({
      prescreen: { status: "done", ...notOffered },
      synthesis: { status: "done", ...notOffered, detail: "synthesis_runtime_not_offered" },
      ethics: { status: "done", ...notOffered },
    });
    expect(await jobsOwnedBy(sid)).toEqual([]);
    expect(await jobsOwnedBy(res.body.proposal_id)).toEqual([]);
  });

  it("with model_work set and a runner that offered its runtime, the prescreen, synthesis and ethics review run on it", async () => {
    await runnerOffering(["offline", "claude"]);
    expect(await put("model_work", { runtime: "claude", model: "claude-test-model" })).toEqual({
      runtime: "claude",
      model: "claude-test-model",
      offered_runtimes: expect.arrayContaining(["claude", "offline"]),
    });
    const council = (await call("/v1/config/council")).body;
    expect(council).toMatchObject({
      prescreen: "model",
      prescreen_runtime: "claude",
      prescreen_model: "claude-test-model",
      synthesis: "model",
      synthesis_runtime: "claude",
      ethics_model: "model",
      ethics_runtime: "claude",
      stored: {},
    });
    expect(council.stages.prescreen).toEqual({ on_model: true, set_by: "model_work", runtime: "claude", model: "claude-test-model" });

    const post = propose(await proposer(), titled("on a model"));
    const screen = await runOneJob(["claude"], () => ({
      text: JSON.stringify({ verdict: "accept", reason: "scoped and safe" }),
      runtime: "claude",
      model: "claude-test-model",
    }));
    expect(screen.payload).toMatchObject({ runtime: "claude", model: "claude-test-model" });
    expect(screen.payload.prompt).toContain("<proposal>");
    const res = await post;
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const sid = res.body.session_id as string;
    expect((await call(`/v1/council/proposals/${res.body.proposal_id}`, { token: null })).body.prescreen).toMatchObject({
      mode: "model",
      status: "passed",
      source: "claude",
      runtime: "claude",
    });
    expect((await session(sid)).model_work.prescreen).toEqual({ status: "done", on_model: true, runtime: "claude" });

    await deliberateAndApprove(sid);
    expect((await session(sid)).model_work.synthesis).toEqual({ status: "pending", on_model: true, runtime: "claude" });
    const synthesis = await runOneJob(["claude"], () => ({
      text: "The council approves publishing a weekly digest of its records.",
      runtime: "claude",
      model: "claude-test-model",
    }));
    expect(synthesis.payload).toMatchObject({ runtime: "claude", model: "claude-test-model" });
    const ethics = await runOneJob(["claude"], () => ({
      text: JSON.stringify({ verdict: "pass", reason: "harmless" }),
      runtime: "claude",
      model: "claude-test-model",
    }));
    expect(ethics.payload).toMatchObject({ runtime: "claude", model: "claude-test-model" });
    expect(ethics.payload.prompt).toContain("ethics reviewer");

    const s = await session(sid);
    expect(s.phase).toBe("approved");
    expect(s.decision).toMatchObject({ synthesis_source: "model", ethics: { model: { status: "passed", reason: "harmless" } } });
    expect(s.model_work).toEqual({
      prescreen: { status: "done", on_model: true, runtime: "claude" },
      synthesis: { status: "done", on_model: true, runtime: "claude" },
      ethics: { status: "done", on_model: true, runtime: "claude" },
    });
    // /a2a shows the same trail.
    expect((await call(`/a2a/council/${sid}`, { token: null })).body.model_work).toEqual(s.model_work);
  });

  it("never second-guesses a stage the operator turned off or on: off stays off, on runs on its runtime unchecked", async () => {
    await put("model_work", { runtime: "claude" });
    try {
      await explicitStages();
    } finally {
      await put("council", {});
      await put("model_work", {});
    }
  });
});

async function explicitStages() {
  await put("council", { prescreen: "off", synthesis_runtime: "grok" });
  const council = (await call("/v1/config/council")).body;
  expect(council).toMatchObject({ prescreen: "off", synthesis: "off", synthesis_runtime: "grok", ethics_model: "model" });
  // What was written, beside the effective values: the stage keys nobody set stay absent.
  expect(council.stored).toMatchObject({ prescreen: "off", synthesis_runtime: "grok" });
  expect(Object.keys(council.stored).filter((k) => /^(prescreen|synthesis|ethics)(_runtime|_model)?$/.test(k))).toEqual([
    "prescreen",
    "synthesis_runtime",
  ]);
  expect(council.stages.prescreen).toEqual({ on_model: false, set_by: "stage", fell_back_because: "stage_off" });
  // Only the runtime set by hand: model_work still decides whether the stage is on, and turns it on
  // only where its runtime is offered (grok is not here), so the synthesis falls back.
  expect(council.stages.synthesis).toEqual({
    on_model: false,
    set_by: "model_work",
    fell_back_because: "runtime_not_offered",
    wanted_runtime: "grok",
  });
  // Turned on by hand: the operator's call, not checked against what runners offer.
  await put("council", { prescreen: "off", synthesis: "model", synthesis_runtime: "grok" });
  expect((await call("/v1/config/council")).body.stages.synthesis).toEqual({ on_model: true, set_by: "stage", runtime: "grok" });

  const res = await propose(await proposer(), titled("explicit off"));
  expect(res.status).toBe(201);
  expect((await session(res.body.session_id)).model_work.prescreen).toEqual({
    status: "done",
    on_model: false,
    fell_back_because: "stage_off",
  });
}

describe("model_work fallbacks are recorded when decided", () => {
  it("keeps a session's recorded reason when the runtime is offered later", async () => {
    await members(2);
    await put("model_work", { runtime: "antigravity" });
    const res = await propose(await proposer(), titled("recorded then"));
    expect(res.status).toBe(201);
    const before = (await session(res.body.session_id)).model_work.prescreen;
    expect(before).toMatchObject({ fell_back_because: "runtime_not_offered", wanted_runtime: "antigravity" });
    await runnerOffering(["antigravity"]);
    expect((await call("/v1/config/council")).body.stages.prescreen).toMatchObject({ on_model: true, runtime: "antigravity" });
    expect((await session(res.body.session_id)).model_work.prescreen).toEqual(before);
    await put("model_work", {});
  });
});

describe("the session object's cached view of the live runtimes", () => {
  it("sees a runner that has just come online, though the isolate cached a miss moments before", async () => {
    await put("council", {});
    await put("model_work", { runtime: "grok" });
    const db = getDb(env.DB);
    const before = await readCouncilConfigCached(db, new Date());
    expect(before.model_work.synthesis).toMatchObject({
      on_model: false,
      fell_back_because: "runtime_not_offered",
      wanted_runtime: "grok",
    });
    // Within the cache's window (a few requests): a cached miss would fall a session's synthesis back
    // to the template for good, though the runtime is now offered.
    await runnerOffering(["grok"]);
    const after = await readCouncilConfigCached(db, new Date());
    expect(after.model_work.synthesis).toEqual({ on_model: true, set_by: "model_work", runtime: "grok" });
    await put("model_work", {});
  });
});
