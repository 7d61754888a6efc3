import { describe, expect, it } from "vitest";
import { buildPickPrompt, parsePick } from "../../../src/tasks/dispatch/llm-select";
import { call, createRunner } from "../../factories";
import { eventsOf, newTask, putEmployee, setConfig } from "../../factories/org";

type Leased = { job_id: string; lease_id: string; payload: { prompt: string; runtime: string } };

async function leaseOne(token: string): Promise<Leased> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const res = await call("/v1/runner/lease", { token, body: { capacity: 1, wait_ms: 2_000, runtimes: ["offline"] } });
    if (res.body.jobs.length > 0) return res.body.jobs[0];
  }
  throw new Error("no job to lease");
}

const complete = (token: string, job: Leased, text: string) =>
  call(`/v1/runner/jobs/${job.job_id}/complete`, { token, body: { lease_id: job.lease_id, result: { text, runtime: "offline" } } });

async function setup(waitMs = 15_000) {
  for (const id of ["ls-lead", "ls-a", "ls-b"]) await putEmployee(id, id === "ls-lead" ? {} : { reports_to: "ls-lead" });
  await setConfig("dispatch", {
    policy: "llm_select",
    rosters: { research: ["ls-a", "ls-b"] },
    llm_select: { runtime: "offline", wait_ms: waitMs },
  });
}

describe("parsePick", () => {
  const ids = ["ls-a", "ls-b"];
  it("accepts only a JSON object naming one candidate, or a bare candidate id", () => {
    expect(parsePick('{"employee_id":"ls-b"}', ids)).toEqual({ ok: true, employeeId: "ls-b" });
    expect(parsePick('```json\n{"employee_id": "ls-a"}\n```', ids)).toEqual({ ok: true, employeeId: "ls-a" });
    expect(parsePick("  ls-a \n", ids)).toEqual({ ok: true, employeeId: "ls-a" });
  });
  it("refuses anything else, including an echo of the prompt that mentions every candidate", () => {
    const prompt = buildPickPrompt({ title: "t", tags: [], priority: "medium", task_class: "medium", acceptance_criteria: [] }, [
      { id: "ls-a", name: "A" },
      { id: "ls-b", name: "B" },
    ]);
    for (const answer of [
      prompt,
      `[offline runtime] ${prompt.split("\n")[0]}`,
      '{"employee_id":"ls-z"}',
      '{"employee_id":"ls-a","also":"ls-b"}',
      "I pick ls-a",
      "",
      null,
      42,
    ]) {
      expect(parsePick(answer, ids)).toEqual({ ok: false, reason: "llm_select_unparseable" });
    }
  });
});

describe("llm_select through POST /v1/tasks", () => {
  it("routes to the employee the model picked from the roster", async () => {
    await setup();
    const runner = await createRunner("picker");
    const post = newTask({ title: "survey vector DBs", assignee: "ls-lead", tags: ["research"] });
    const job = await leaseOne(runner.token);
    expect(job.payload.runtime).toBe("offline");
    expect(job.payload.prompt).toContain("survey vector DBs");
    expect(job.payload.prompt).toContain('"employee_id":"ls-b"');
    expect((await complete(runner.token, job, '{"employee_id":"ls-b"}')).status).toBe(200);
    const res = await post;
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ assigned_to: "ls-b", routed_by: "llm_select" });
    expect((await call(`/v1/tasks/${res.body.task_id}`)).body.route).toEqual({
      policy: "llm_select",
      roster: ["ls-a", "ls-b"],
      job_id: job.job_id,
    });
    const ended = (await eventsOf("dispatch.llm_select_ended")).filter((e) => e.subject === res.body.task_id);
    expect(ended.map((e) => e.payload)).toEqual([expect.objectContaining({ job_id: job.job_id, status: "completed" })]);
  });

  it("falls back to the hierarchy on an answer that does not parse, and records why", async () => {
    await setup();
    const runner = await createRunner("babbler");
    const post = newTask({ assignee: "ls-lead", tags: ["research"] });
    const job = await leaseOne(runner.token);
    await complete(runner.token, job, "I think ls-a would be great at this!");
    const res = await post;
    expect(res.body).toMatchObject({ assigned_to: "ls-lead", routed_by: "hierarchy" });
    expect((await call(`/v1/tasks/${res.body.task_id}`)).body.route).toMatchObject({
      policy: "llm_select",
      fallback: "llm_select_unparseable",
      job_id: job.job_id,
    });
  });

  it("falls back when the pick job fails", async () => {
    await setup();
    const runner = await createRunner("failer");
    const post = newTask({ assignee: "ls-lead", tags: ["research"] });
    const job = await leaseOne(runner.token);
    await call(`/v1/runner/jobs/${job.job_id}/fail`, {
      token: runner.token,
      body: { lease_id: job.lease_id, error: { code: "not_logged_in", message: "x" }, retryable: false },
    });
    const res = await post;
    expect(res.body.routed_by).toBe("hierarchy");
    expect((await call(`/v1/tasks/${res.body.task_id}`)).body.route.fallback).toBe("llm_select_failed");
  });

  it("waits only wait_ms: with no runner it answers with the hierarchy, and a late answer changes nothing", async () => {
    await setup(1_000);
    const res = await newTask({ assignee: "ls-lead", tags: ["research"] });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ assigned_to: "ls-lead", routed_by: "hierarchy" });
    const route = (await call(`/v1/tasks/${res.body.task_id}`)).body.route;
    expect(route.fallback).toBe("llm_select_timeout");
    const runner = await createRunner("late");
    const job = await leaseOne(runner.token);
    expect(job.job_id).toBe(route.job_id);
    await complete(runner.token, job, '{"employee_id":"ls-a"}');
    expect((await call(`/v1/tasks/${res.body.task_id}`)).body).toMatchObject({ assigned_to: "ls-lead", routed_by: "hierarchy" });
    expect((await eventsOf("task.created")).filter((e) => e.subject === res.body.task_id)).toHaveLength(1);
    expect((await eventsOf("dispatch.llm_select_ended")).filter((e) => e.subject === res.body.task_id)).toHaveLength(1);
  });

  it("offers only roster members with room in their dispatch window; none with room is 429 before any job", async () => {
    await setup(1_000);
    await setConfig("dispatch_guard", { max_in_window: 1, window_secs: 3600 });
    await setConfig("dispatch", { policy: "round_robin", rosters: { research: ["ls-a", "ls-b"] } });
    await newTask({ assignee: "ls-lead", tags: ["research"] });
    await newTask({ assignee: "ls-lead", tags: ["research"] });
    await setConfig("dispatch", {
      policy: "llm_select",
      rosters: { research: ["ls-a", "ls-b"] },
      llm_select: { runtime: "offline", wait_ms: 1_000 },
    });
    const jobsBefore = (await eventsOf("job.queued")).length;
    const res = await newTask({ assignee: "ls-lead", tags: ["research"] });
    expect(res.status).toBe(429);
    expect((await eventsOf("job.queued")).length).toBe(jobsBefore);
    await setConfig("dispatch_guard", {});
  });
});
