import { env } from "cloudflare:workers";
import { count } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { events, tasks } from "../../../src/db/schema";
import { call, createOperator, createRunner } from "../../factories";
import { createTask, eventsOf, newTask, putEmployee, settle } from "../../factories/org";

const counts = async () => {
  const db = getDb(env.DB);
  return { tasks: (await db.select({ n: count() }).from(tasks).get())!.n, events: (await db.select({ n: count() }).from(events).get())!.n };
};

describe("tasks", () => {
  it("routes by the hierarchy by default: the task goes to its assignee, routed_by hierarchy", async () => {
    await putEmployee("ann");
    const res = await newTask({
      title: "Fix invoice export",
      assignee: "ann",
      tags: ["billing", "urgent"],
      acceptance_criteria: ["CSV opens"],
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ assigned_to: "ann", routed_by: "hierarchy", task_class: "billing" });
    const task = (await call(`/v1/tasks/${res.body.task_id}`)).body;
    expect(task).toMatchObject({
      task_id: res.body.task_id,
      title: "Fix invoice export",
      mode: "goal",
      tags: ["billing", "urgent"],
      priority: "medium",
      task_class: "billing",
      status: "assigned",
      retry_count: 0,
      acceptance_criteria: ["CSV opens"],
      route: { policy: "fixed_hierarchy" },
    });
    const created = (await eventsOf("task.created")).find((e) => e.subject === res.body.task_id);
    expect(created?.payload).toMatchObject({ assigned_to: "ann", routed_by: "hierarchy", task_class: "billing" });
  });

  it("uses the priority as the task class when there is no tag", async () => {
    await putEmployee("pri");
    expect((await createTask({ assignee: "pri", priority: "high", mode: "plain" })) as unknown).toMatchObject({ task_class: "high" });
    expect((await createTask({ assignee: "pri" })) as unknown).toMatchObject({ task_class: "medium" });
  });

  it("refuses an unknown assignee or a bad body with 422 and creates nothing", async () => {
    const before = await counts();
    const unknown = await newTask({ assignee: "nobody" });
    expect(unknown.status).toBe(422);
    expect(unknown.body.errors).toEqual([{ path: "assignee", message: "unknown employee 'nobody'" }]);
    for (const bad of [
      { assignee: "ann", mode: "sometimes" },
      { assignee: "ann", priority: "p0" },
      { assignee: "ann", tags: ["a\u0007"] },
      { assignee: "ann", extra: 1 },
    ]) {
      expect((await newTask(bad)).status).toBe(422);
    }
    expect(await counts()).toEqual(before);
  });

  it("settles once: done, needs_human (pause_class defaults to unknown), failed; repeats are 200, changes 409", async () => {
    await putEmployee("set");
    const a = await createTask({ assignee: "set" });
    const done = await settle(a.task_id, { status: "done", retry_count: 2 });
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ status: "done", retry_count: 2 });
    expect(done.body.pause_class).toBeUndefined();
    expect((await settle(a.task_id, { status: "done", retry_count: 2 })).status).toBe(200);
    const change = await settle(a.task_id, { status: "failed" });
    expect(change.status).toBe(409);
    expect(change.body).toMatchObject({ code: "already_settled", current_status: "done" });
    const b = await createTask({ assignee: "set" });
    expect((await settle(b.task_id, { status: "needs_human" })).body).toMatchObject({ status: "needs_human", pause_class: "unknown" });
    const c = await createTask({ assignee: "set" });
    expect((await settle(c.task_id, { status: "needs_human", pause_class: "no_progress" })).body.pause_class).toBe("no_progress");
    expect((await eventsOf("task.settled")).filter((e) => e.subject === a.task_id)).toHaveLength(1);
  });

  it("refuses pause_class on anything but needs_human, and unknown pause classes", async () => {
    await putEmployee("pc");
    const t = await createTask({ assignee: "pc" });
    const res = await settle(t.task_id, { status: "done", pause_class: "infra" });
    expect(res.status).toBe(422);
    expect(res.body.errors[0].path).toBe("pause_class");
    expect((await settle(t.task_id, { status: "needs_human", pause_class: "bored" })).status).toBe(422);
    expect((await call(`/v1/tasks/${t.task_id}`)).body.status).toBe("assigned");
    expect((await settle("task_ffffffffffffffff", { status: "done" })).status).toBe(404);
  });

  it("lets a runner or a manager settle, not a viewer; only managers create", async () => {
    await putEmployee("who");
    const runner = await createRunner("settler");
    const viewer = await createOperator("viewer", "vw");
    const t = await createTask({ assignee: "who" });
    expect((await newTask({ assignee: "who" }, viewer)).status).toBe(403);
    expect((await newTask({ assignee: "who" }, runner.token)).status).toBe(403);
    expect((await settle(t.task_id, { status: "done" }, viewer)).status).toBe(403);
    const res = await settle(t.task_id, { status: "done" }, runner.token);
    expect(res.status).toBe(200);
    expect(res.body.settled_by).toBe(runner.id);
    expect((await call(`/v1/tasks/${t.task_id}`, { token: viewer })).status).toBe(200);
  });

  it("settles exactly once when many settles race", async () => {
    await putEmployee("race");
    const t = await createTask({ assignee: "race" });
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => settle(t.task_id, i % 2 ? { status: "failed" } : { status: "done" })),
    );
    const final = (await call(`/v1/tasks/${t.task_id}`)).body.status;
    expect(results.filter((r) => r.status === 200).every((r) => r.body.status === final)).toBe(true);
    expect(results.filter((r) => r.status === 409).every((r) => r.body.current_status === final)).toBe(true);
    expect((await eventsOf("task.settled")).filter((e) => e.subject === t.task_id)).toHaveLength(1);
  });
});
