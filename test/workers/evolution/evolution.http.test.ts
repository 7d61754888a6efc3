import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getAgentLock } from "../../../src/durable-objects/agent-lock-rpc";
import { getEvolutionSemaphore } from "../../../src/durable-objects/evolution-semaphore-rpc";
import { trigger } from "../../../src/evolution/triggers";
import { DEFAULT_THRESHOLDS, newMetaCognition } from "../../../src/prediction";
import { call, createRunner } from "../../factories";
import { completeStage } from "../../factories/scripted-runner";
import { eventsOf } from "../../factories/team";

/** The evolution side of issue 21: the router's triggers, their locks, metacognition's persistence, the silence breaker. */
async function putEmployee(id: string, fields: Record<string, unknown> = {}) {
  const res = await call(`/v1/employees/${id}`, {
    method: "PUT",
    body: { name: `Employee ${id}`, runtime: "claude", model: { preferred: "claude-sonnet-4-6" }, ...fields },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

const at = () => new Date().toISOString();
/** A transcript the engine finds significant on a cold start: corrections, follow-ups, negative feedback. */
const ROUGH = [
  { role: "user", content: "Write the release notes for version 2", at: at() },
  { role: "assistant", content: "Here are the release notes.", at: at() },
  { role: "user", content: "That's wrong, incorrect version. Please fix", at: at() },
  { role: "assistant", content: "Fixed.", at: at() },
  { role: "user", content: "no, still wrong?", at: at() },
  { role: "assistant", content: "Sorry.", at: at() },
  { role: "user", content: "try again?", at: at() },
];

function seedState(agent: string, fields: { consecutive?: number; metacognition?: unknown; thresholds?: unknown } = {}) {
  return env.DB.prepare(
    `INSERT INTO evolution_state (agent_id, thresholds, metacognition, consecutive_significant, predictions, version, updated_at)
     VALUES (?, ?, ?, ?, 0, 1, ?)`,
  )
    .bind(
      agent,
      JSON.stringify(fields.thresholds ?? DEFAULT_THRESHOLDS),
      JSON.stringify(fields.metacognition ?? newMetaCognition()),
      fields.consecutive ?? 0,
      at(),
    )
    .run();
}

describe("what the router triggers", () => {
  it("escalates the third significant conversation in a row to an emergency evolution, recorded as refused while gvu is opt-in off", async () => {
    await putEmployee("rio");
    await seedState("rio", { consecutive: 2 });
    const res = await call("/v1/conversations", {
      body: { agent_id: "rio", user_id: "u", messages: ROUGH, feedback: { polarity: "negative", strength: 0.4 } },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.error.category).toBe("significant");
    expect(res.body.action).toMatchObject({
      kind: "trigger_emergency_evolution",
      reason: "consecutive_significant",
      trigger: { status: "refused", reason: "gvu_disabled" },
    });
    const view = (await call("/v1/employees/rio/evolution")).body;
    expect(view.recent_requests).toEqual([
      expect.objectContaining({ kind: "emergency_evolution", status: "refused", reason: "gvu_disabled" }),
    ]);
    expect(view.counters).toMatchObject({ consecutive_significant: 3, predictions: 1 });
    expect((await eventsOf("evolution.trigger_refused", "rio"))[0]!.payload).toMatchObject({
      reason: "gvu_disabled",
      kind: "emergency_evolution",
    });
  });

  it("sends a single significant conversation to a reflection (System 2)", async () => {
    await putEmployee("ren");
    const res = await call("/v1/conversations", {
      body: { agent_id: "ren", user_id: "u", messages: ROUGH, feedback: { polarity: "negative", strength: 0.4 } },
    });
    expect(res.body.action).toMatchObject({ kind: "trigger_reflection", trigger: { status: "running", job_id: expect.any(String) } });
  });

  it("runs a reflection as a job on the employee's model whose answer becomes a memory entry, and frees the lock and slot", async () => {
    await putEmployee("sol");
    const runner = await createRunner("reflect-1");
    const now = new Date();
    const out = await trigger(env, { agentId: "sol", kind: "reflection", context: "The user corrected the dates twice." }, now);
    expect(out).toMatchObject({ status: "running", job_id: expect.any(String) });
    expect(await getAgentLock(env, "sol").status({ now: now.getTime() })).toMatchObject({ holder: out.request_id });
    let job: any;
    for (let i = 0; i < 20 && !job; i++) {
      const res = await call("/v1/runner/lease", { token: runner.token, body: { capacity: 5, wait_ms: 1_000, runtimes: ["claude"] } });
      job = (res.body.jobs as any[]).find((j) => j.job_id === (out as { job_id: string }).job_id);
    }
    expect(job.payload).toMatchObject({ runtime: "claude", model: "claude-sonnet-4-6" });
    expect(job.payload.prompt).toContain("<trigger_context>\nThe user corrected the dates twice.\n</trigger_context>");
    await completeStage(runner.token, job, { text: "Confirm the date before booking.", runtime: "claude" });
    const deadline = Date.now() + 15_000;
    let memory: any[] = [];
    while (Date.now() < deadline && memory.length === 0) {
      memory = (await call("/v1/employees/sol/memory")).body.entries;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(memory).toEqual([expect.objectContaining({ text: "Confirm the date before booking.", tags: ["reflection"], importance: 0.8 })]);
    expect(await getAgentLock(env, "sol").status({ now: Date.now() })).toBeNull();
    expect((await getEvolutionSemaphore(env).status({ now: Date.now() })).holders).not.toContain(out.request_id);
    expect((await eventsOf("evolution.reflection_done", "sol")).length).toBe(1);
  });

  it("calibrates the agent's thresholds on its 100th prediction, persists them, and says before and after", async () => {
    await putEmployee("tao");
    // 99 predictions so far, all critical: the 100th calibrates and the critical share tightens significant_upper.
    const window = Array.from({ length: 50 }, () => ({ category: "critical", significant_or_worse: true, critical: true, improved: null }));
    await seedState("tao", { metacognition: { ...newMetaCognition(), predictions_since_calibration: 99, window } });
    const res = await call("/v1/conversations", { body: { agent_id: "tao", user_id: "u", messages: ROUGH.slice(0, 2) } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const [adjusted] = await eventsOf("evolution.thresholds_adjusted", "tao");
    expect(adjusted!.payload).toMatchObject({ before: DEFAULT_THRESHOLDS, after: { significant_upper: 0.75 } });
    expect((await call("/v1/employees/tao/evolution")).body.thresholds).toMatchObject({ significant_upper: 0.75 });
  });

  it("counts both of two conversations of one user and agent that close at the same moment", async () => {
    await putEmployee("uma");
    const bodies = [0, 1, 2, 3].map(() => ({ agent_id: "uma", user_id: "same-user", messages: ROUGH.slice(0, 2) }));
    const results = await Promise.all(bodies.map((body) => call("/v1/conversations", { body })));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    const model = await env.DB.prepare(
      `SELECT total_conversations, version FROM user_models WHERE user_id = 'same-user' AND agent_id = 'uma'`,
    ).first();
    expect(model).toEqual({ total_conversations: 4, version: 4 });
    expect((await call("/v1/employees/uma/evolution")).body.counters.predictions).toBe(4);
  });
});

describe("the silence breaker", () => {
  it("warns once for an employee whose evolution was not triggered for max_silence_hours, then resets its clock", async () => {
    await putEmployee("quiet-one", { evolution: { max_silence_hours: 2 } });
    const tick = async () => (await call("/v1/admin/ticks/evolution", { method: "POST" })).body.summary;
    await tick();
    const before = (await eventsOf("evolution.silence_breaker", "quiet-one")).length;
    expect((await call("/v1/admin/clock", { body: { advance_ms: 3 * 3_600_000 } })).status).toBe(200);
    await tick();
    const events = await eventsOf("evolution.silence_breaker", "quiet-one");
    expect(events.length).toBe(before + 1);
    expect(events.at(-1)!.payload).toMatchObject({ agent_id: "quiet-one", max_silence_hours: 2 });
    await tick();
    expect((await eventsOf("evolution.silence_breaker", "quiet-one")).length).toBe(before + 1);
    expect((await call("/v1/employees/quiet-one/evolution")).body.last_trigger).toMatchObject({ kind: "silence_breaker" });
  });
});
