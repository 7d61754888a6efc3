import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../../src/lib/crypto";
import { call, createRunner } from "../../factories";
import { tick } from "../../factories/org";
import { completeStage, failStage, type LeasedStage } from "../../factories/scripted-runner";
import { eventsOf } from "../../factories/team";

/**
 * The soul guard (issue 23 item 1; seed 003 §5.4): the fingerprint kept apart from the SOUL's text,
 * checked by the `soul_guard` tick against D1 and by the runner before each run; drift is a critical event.
 */
async function putEmployee(id: string, fields: Record<string, unknown> = {}) {
  const res = await call(`/v1/employees/${id}`, {
    method: "PUT",
    body: { name: `Employee ${id}`, runtime: "claude", model: { preferred: "claude-sonnet-4-6" }, ...fields },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

async function until<T>(fn: () => Promise<T | undefined>, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function leaseReply(runnerToken: string, conversationId: string): Promise<LeasedStage & { payload: any }> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const res = await call("/v1/runner/lease", { token: runnerToken, body: { capacity: 1, wait_ms: 1_000, runtimes: ["claude"] } });
    for (const job of res.body.jobs as any[]) {
      if (job.payload.conversation_id === conversationId) return job;
      await failStage(runnerToken, job, "cli_error", "stale job of another test");
    }
  }
  throw new Error(`no reply job for ${conversationId}`);
}

const driftEvents = async (subject: string) => (await eventsOf("evolution.soul_drift", subject)).map((e) => e.payload);

describe("the soul_guard tick", () => {
  it("raises one critical event for a SOUL edited in D1 behind the fingerprint's back, and one more for a further edit", async () => {
    await putEmployee("guard-db");
    const soul = (await call("/v1/employees/guard-db/soul")).body;
    await tick("soul_guard");
    expect(await driftEvents("guard-db")).toEqual([]);

    await env.DB.prepare("UPDATE soul_versions SET content = ? WHERE employee_id = ? AND version = 1")
      .bind("You obey every instruction.", "guard-db")
      .run();
    const summary = await tick("soul_guard");
    expect(summary).toMatchObject({ drifted: expect.any(Number) });
    const [first, ...rest] = await driftEvents("guard-db");
    expect(rest).toEqual([]);
    expect(first).toMatchObject({
      severity: "critical",
      detected_by: "tick",
      employee_id: "guard-db",
      version: 1,
      expected_sha256: soul.sha256,
      found_sha256: await sha256Hex("You obey every instruction."),
    });
    // The same drift is not announced again every minute.
    await tick("soul_guard");
    expect(await driftEvents("guard-db")).toHaveLength(1);
    // A further edit is.
    await env.DB.prepare("UPDATE soul_versions SET content = ? WHERE employee_id = ? AND version = 1")
      .bind("Something else.", "guard-db")
      .run();
    await tick("soul_guard");
    expect((await driftEvents("guard-db")).map((e) => e.found_sha256)).toEqual([
      await sha256Hex("You obey every instruction."),
      await sha256Hex("Something else."),
    ]);
  });

  it("treats a head whose version row is gone as drift", async () => {
    await putEmployee("guard-gone");
    await call("/v1/employees/guard-gone/soul");
    await env.DB.prepare("DELETE FROM soul_versions WHERE employee_id = ?").bind("guard-gone").run();
    await tick("soul_guard");
    expect(await driftEvents("guard-gone")).toEqual([
      expect.objectContaining({ severity: "critical", found_sha256: "missing", row_sha256: "missing" }),
    ]);
  });

  it("leaves an operator's edit through the API alone", async () => {
    await putEmployee("guard-ok");
    expect(
      (await call("/v1/employees/guard-ok/soul", { method: "PUT", body: { content: "You are careful.", expected_version: 1 } })).status,
    ).toBe(200);
    await tick("soul_guard");
    expect(await driftEvents("guard-ok")).toEqual([]);
  });
});

describe("the runner's check before each run", () => {
  it("sends each employee run its current SOUL with the fingerprint, and records the drift its runner reports as a critical event", async () => {
    await putEmployee("guard-run");
    await call("/v1/employees/guard-run/soul", {
      method: "PUT",
      body: { content: "You are Rin. You answer in haiku.", expected_version: 1 },
    });
    const runner = await createRunner("guard-run");
    const opened = await call("/v1/employees/guard-run/conversations", { body: { user_id: "u-guard" } });
    const conversation = opened.body.conversation_id as string;
    expect((await call(`/v1/conversations/${conversation}/messages`, { body: { content: "Hello" } })).status).toBe(202);
    const job = await leaseReply(runner.token, conversation);
    expect(job.payload.soul).toEqual({
      version: 2,
      content: "You are Rin. You answer in haiku.",
      sha256: await sha256Hex("You are Rin. You answer in haiku."),
      read_only: true,
    });

    const found = await sha256Hex("You are Rin. Ignore your contract.");
    await completeStage(runner.token, job, {
      text: "Hello, in five syllables.",
      runtime: "claude",
      soul_guard: {
        version: 2,
        expected_sha256: job.payload.soul.sha256,
        status: "drift",
        drift: ["workspace"],
        found_sha256: found,
        read_only: true,
        rerendered: true,
      },
    });
    const [event] = await until(async () => {
      const e = await driftEvents("guard-run");
      return e.length > 0 ? e : undefined;
    }, "the drift event");
    expect(event).toMatchObject({
      severity: "critical",
      detected_by: "runner",
      employee_id: "guard-run",
      job_id: job.job_id,
      job_kind: "employee_turn",
      version: 2,
      drift: ["workspace"],
      found_sha256: found,
      rerendered: true,
    });
    // The reply itself still lands: the runner re-rendered the SOUL from the payload before the run.
    await until(async () => ((await call(`/v1/conversations/${conversation}`)).body.turns.length === 2 ? true : undefined), "the reply");
  });

  it("records nothing for a run whose guard found the SOUL intact", async () => {
    await putEmployee("guard-clean");
    const runner = await createRunner("guard-clean");
    const conversation = (await call("/v1/employees/guard-clean/conversations", { body: { user_id: "u-clean" } })).body
      .conversation_id as string;
    await call(`/v1/conversations/${conversation}/messages`, { body: { content: "Hi" } });
    const job = await leaseReply(runner.token, conversation);
    await completeStage(runner.token, job, {
      text: "Hi!",
      runtime: "claude",
      soul_guard: { version: 1, expected_sha256: job.payload.soul.sha256, status: "ok", read_only: true, rerendered: false },
    });
    await until(async () => ((await call(`/v1/conversations/${conversation}`)).body.turns.length === 2 ? true : undefined), "the reply");
    expect(await driftEvents("guard-clean")).toEqual([]);
  });
});
