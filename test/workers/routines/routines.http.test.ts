import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { routinesTick } from "../../../src/routines/tick";
import { call, createOperator } from "../../factories";
import { putEmployee, tick } from "../../factories/org";

/**
 * Routines end to end (docs/routines.md): the `routines` tick run by hand at times the test clock
 * sets. Each test works on its own day and its own employee, and its routines are deleted after
 * it, so the tick of one test never meets another test's routine.
 */
const GOAL = { title: "Write the weekly report", acceptance_criteria: ["report.md exists"] };

async function setClock(iso: string) {
  const res = await call("/v1/admin/clock", { body: { set: iso } });
  expect(res.status).toBe(200);
}

async function newRoutine(body: Record<string, unknown>) {
  const res = await call("/v1/routines", { body: { name: "weekly report", template: GOAL, ...body } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { routine_id: string; [k: string]: any };
}

async function remove(id: string) {
  expect((await call(`/v1/routines/${id}`, { method: "DELETE" })).status).toBe(200);
}

/** The routine's outcome events, oldest first. */
async function outcomes(id: string): Promise<Array<{ type: string; payload: any }>> {
  const res = await call(`/v1/events?limit=500&type=routine.&subject=${id}`);
  return (res.body.events as Array<{ type: string; payload: any }>).filter(
    (e) => e.type === "routine.fired" || e.type === "routine.skipped",
  );
}

const count = async (sql: string, ...binds: unknown[]) =>
  (await env.DB.prepare(sql)
    .bind(...binds)
    .first<number>("n"))!;
const tasksOf = (employee: string) => count("SELECT count(*) AS n FROM tasks WHERE assigned_to = ?", employee);
const jobs = () => count("SELECT count(*) AS n FROM jobs");

afterEach(async () => {
  await env.DB.prepare("DELETE FROM routines").run();
});

describe("the routines tick", () => {
  it("fires a routine once on the tick of its slot, however often the tick runs", async () => {
    await putEmployee("rt-once");
    await setClock("2031-03-03T09:00:05.000Z");
    const r = await newRoutine({ employee_id: "rt-once", schedule: { cron: "*/5 * * * *" } });
    expect(r).toMatchObject({
      enabled: true,
      last_slot: "2031-03-03T09:00:00.000Z",
      next_slot: "2031-03-03T09:05:00.000Z",
      last_task_id: null,
      last_outcome: null,
      revision: 1,
    });
    // Its creation's own minute already passed: nothing to fire until 09:05.
    await tick("routines");
    expect(await outcomes(r.routine_id)).toEqual([]);

    await setClock("2031-03-03T09:05:05.000Z");
    const first = await tick("routines");
    const second = await tick("routines");
    expect(first).toMatchObject({ due: 1, fired: 1, skipped: 0 });
    expect(second).toMatchObject({ due: 0, fired: 0 });
    const seen = await outcomes(r.routine_id);
    expect(seen.map((e) => [e.type, e.payload.slot])).toEqual([["routine.fired", "2031-03-03T09:05:00.000Z"]]);
    expect(await tasksOf("rt-once")).toBe(1);

    const read = (await call(`/v1/routines/${r.routine_id}`)).body;
    const taskId = seen[0]!.payload.task_id as string;
    expect(read).toMatchObject({
      last_slot: "2031-03-03T09:05:00.000Z",
      last_task_id: taskId,
      next_slot: "2031-03-03T09:10:00.000Z",
      last_outcome: { outcome: "fired", slot: "2031-03-03T09:05:00.000Z", task_id: taskId, reason: null },
      recent_outcomes: [{ outcome: "fired", task_id: taskId }],
    });
    expect(Date.parse(read.last_fired_at)).toBeGreaterThanOrEqual(Date.parse("2031-03-03T09:05:00.000Z"));
    const task = (await call(`/v1/tasks/${taskId}`)).body;
    expect(task).toMatchObject({ title: GOAL.title, status: "assigned", created_by: `routine:${r.routine_id}`, assigned_to: "rt-once" });
    await remove(r.routine_id);
  });

  it("fires a slot once when ticks race for it", async () => {
    await putEmployee("rt-race");
    await setClock("2031-03-04T09:00:05.000Z");
    const r = await newRoutine({ employee_id: "rt-race", schedule: { every_minutes: 5 } });
    await setClock("2031-03-04T09:05:05.000Z");
    const now = new Date((await call("/v1/admin/clock")).body.now);
    const summaries = await Promise.all([tick("routines"), tick("routines"), routinesTick(env, now), routinesTick(env, now)]);
    expect(summaries.reduce((n, s: any) => n + s.fired, 0)).toBe(1);
    expect(summaries.reduce((n, s: any) => n + s.skipped, 0)).toBe(0);
    const seen = await outcomes(r.routine_id);
    expect(seen.map((e) => [e.type, e.payload.slot])).toEqual([["routine.fired", "2031-03-04T09:05:00.000Z"]]);
    expect(await tasksOf("rt-race")).toBe(1);
    await remove(r.routine_id);
  });

  it("fires slots missed while nothing ran once, as the newest, from the state kept in D1", async () => {
    await putEmployee("rt-down");
    await setClock("2031-03-05T09:00:05.000Z");
    const r = await newRoutine({ employee_id: "rt-down", schedule: { every_minutes: 10 } });
    await setClock("2031-03-05T09:10:05.000Z");
    expect(await tick("routines")).toMatchObject({ fired: 1 });
    const firstTask = (await outcomes(r.routine_id))[0]!.payload.task_id as string;
    expect((await call(`/v1/tasks/${firstTask}/settle`, { body: { status: "done" } })).status).toBe(200);

    // Down for five slots (09:20 … 10:00). A new isolate reads the same D1: the restart is the next tick.
    await setClock("2031-03-05T10:05:05.000Z");
    const now = new Date((await call("/v1/admin/clock")).body.now);
    expect(await routinesTick(env, now)).toMatchObject({ due: 1, fired: 1 });
    expect(await tick("routines")).toMatchObject({ due: 0, fired: 0 });
    const seen = await outcomes(r.routine_id);
    expect(seen.map((e) => [e.type, e.payload.slot, e.payload.missed_slots])).toEqual([
      ["routine.fired", "2031-03-05T09:10:00.000Z", undefined],
      ["routine.fired", "2031-03-05T10:00:00.000Z", 4],
    ]);
    expect(await tasksOf("rt-down")).toBe(2);
    await remove(r.routine_id);
  });

  it("skips the slots of a paused employee for good: after resume the old slot does not fire, the next one does", async () => {
    await putEmployee("rt-pause");
    await setClock("2031-03-06T09:00:05.000Z");
    const r = await newRoutine({ employee_id: "rt-pause", schedule: { cron: "0 * * * *" } });
    expect((await call("/v1/employees/rt-pause/pause", { body: {} })).status).toBe(200);

    await setClock("2031-03-06T10:00:05.000Z");
    expect(await tick("routines")).toMatchObject({ fired: 0, skipped: 1, by_reason: { employee_paused: 1 } });
    expect(await tasksOf("rt-pause")).toBe(0);

    expect((await call("/v1/employees/rt-pause/resume", { body: {} })).status).toBe(200);
    expect(await tick("routines")).toMatchObject({ due: 0, fired: 0 });
    expect(await tasksOf("rt-pause")).toBe(0);

    await setClock("2031-03-06T11:00:05.000Z");
    expect(await tick("routines")).toMatchObject({ fired: 1 });
    const seen = await outcomes(r.routine_id);
    expect(seen.map((e) => [e.type, e.payload.slot, e.payload.reason])).toEqual([
      ["routine.skipped", "2031-03-06T10:00:00.000Z", "employee_paused"],
      ["routine.fired", "2031-03-06T11:00:00.000Z", undefined],
    ]);
    expect(await tasksOf("rt-pause")).toBe(1);
    await remove(r.routine_id);
  });

  it("merges a wake into the goal still open from the last one: no goal, no runner job, no model call", async () => {
    await putEmployee("rt-merge");
    await setClock("2031-03-07T09:00:05.000Z");
    const r = await newRoutine({ employee_id: "rt-merge", schedule: { every_minutes: 15 } });

    await setClock("2031-03-07T09:15:05.000Z");
    const before = await jobs();
    expect(await tick("routines")).toMatchObject({ fired: 1 });
    const afterFire = await jobs();
    // The fire opened a goal whose loop submitted the employee's first run: a runner job.
    expect(afterFire).toBeGreaterThan(before);
    const openTask = (await outcomes(r.routine_id))[0]!.payload.task_id as string;

    await setClock("2031-03-07T09:30:05.000Z");
    expect(await tick("routines")).toMatchObject({ fired: 0, skipped: 1, by_reason: { previous_goal_open: 1 } });
    expect(await jobs()).toBe(afterFire);
    expect(await tasksOf("rt-merge")).toBe(1);
    const merged = (await outcomes(r.routine_id))[1]!;
    expect(merged).toMatchObject({
      type: "routine.skipped",
      payload: { reason: "previous_goal_open", task_id: openTask, slot: "2031-03-07T09:30:00.000Z" },
    });

    // Once that goal is settled, the next slot opens a new one.
    expect((await call(`/v1/tasks/${openTask}/settle`, { body: { status: "done" } })).status).toBe(200);
    await setClock("2031-03-07T09:45:05.000Z");
    expect(await tick("routines")).toMatchObject({ fired: 1 });
    expect(await tasksOf("rt-merge")).toBe(2);
    await remove(r.routine_id);
  });

  it("disables a retired employee's routines, and refuses a new or re-enabled routine for it (409 employee_retired)", async () => {
    await putEmployee("rt-retire");
    await setClock("2031-03-08T09:00:05.000Z");
    const r = await newRoutine({ employee_id: "rt-retire", schedule: { every_minutes: 30 } });
    expect((await call("/v1/employees/rt-retire/retire", { body: {} })).status).toBe(200);
    expect((await call(`/v1/routines/${r.routine_id}`)).body).toMatchObject({ enabled: false });
    await setClock("2031-03-08T09:30:05.000Z");
    const summary = (await tick("routines")) as { fired: number; by_reason: Record<string, number> };
    expect(summary.fired).toBe(0);
    expect(summary.by_reason.employee_retired).toBeUndefined();
    expect(await tasksOf("rt-retire")).toBe(0);

    const refused = await call("/v1/routines", {
      body: { employee_id: "rt-retire", name: "x", schedule: { every_minutes: 5 }, template: GOAL },
    });
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe("employee_retired");
    expect((await call(`/v1/routines/${r.routine_id}`, { method: "PATCH", body: { enabled: false } })).status).toBe(200);
    const enable = await call(`/v1/routines/${r.routine_id}`, { method: "PATCH", body: { enabled: true } });
    expect(enable.status).toBe(409);
    expect(enable.body.code).toBe("employee_retired");
    await remove(r.routine_id);
  });

  it("records a refused goal as goal_refused with its code, and goes on with the other routines", async () => {
    await putEmployee("rt-refused");
    await putEmployee("rt-fine");
    await setClock("2031-03-09T09:00:05.000Z");
    const bad = await newRoutine({ employee_id: "rt-refused", schedule: { every_minutes: 5 } });
    const fine = await newRoutine({ employee_id: "rt-fine", schedule: { every_minutes: 5 } });
    const ghost = await newRoutine({ employee_id: "rt-refused", schedule: { every_minutes: 5 } });
    // A template stored under an older goal body that no longer parses, and an employee row that is gone.
    await env.DB.prepare("UPDATE routines SET template = json_set(template, '$.title', '') WHERE id = ?").bind(bad.routine_id).run();
    await env.DB.prepare("UPDATE routines SET employee_id = 'rt-gone' WHERE id = ?").bind(ghost.routine_id).run();
    await setClock("2031-03-09T09:05:05.000Z");
    expect(await tick("routines")).toMatchObject({ fired: 1, skipped: 2, by_reason: { goal_refused: 2 } });
    expect((await outcomes(bad.routine_id)).map((e) => e.payload)).toEqual([
      expect.objectContaining({ reason: "goal_refused", error_code: "validation_failed", slot: "2031-03-09T09:05:00.000Z" }),
    ]);
    expect((await call(`/v1/routines/${ghost.routine_id}`)).body.last_outcome).toMatchObject({
      outcome: "skipped",
      reason: "goal_refused",
      error_code: "not_found",
    });
    expect(await tasksOf("rt-refused")).toBe(0);
    expect(await tasksOf("rt-fine")).toBe(1);
    await remove(bad.routine_id);
    await remove(fine.routine_id);
  });

  it("does not fire a slot missed while disabled once enabled again; a new schedule starts after the change", async () => {
    await putEmployee("rt-toggle");
    await setClock("2031-03-10T09:00:05.000Z");
    const r = await newRoutine({ employee_id: "rt-toggle", schedule: { every_minutes: 5 } });
    const off = await call(`/v1/routines/${r.routine_id}`, { method: "PATCH", body: { enabled: false, revision: 1 } });
    expect(off.status).toBe(200);
    expect(off.body).toMatchObject({ enabled: false, next_slot: null, revision: 2 });

    await setClock("2031-03-10T09:20:05.000Z");
    expect(await tick("routines")).toMatchObject({ due: 0 });
    const on = await call(`/v1/routines/${r.routine_id}`, { method: "PATCH", body: { enabled: true } });
    expect(on.body).toMatchObject({ enabled: true, last_slot: "2031-03-10T09:20:00.000Z", next_slot: "2031-03-10T09:25:00.000Z" });
    expect(await tick("routines")).toMatchObject({ due: 0 });

    const hourly = await call(`/v1/routines/${r.routine_id}`, { method: "PATCH", body: { schedule: { cron: "0 * * * *" } } });
    expect(hourly.body).toMatchObject({ schedule: { cron: "0 * * * *" }, next_slot: "2031-03-10T10:00:00.000Z" });
    await setClock("2031-03-10T10:00:05.000Z");
    expect(await tick("routines")).toMatchObject({ fired: 1 });
    expect((await outcomes(r.routine_id)).map((e) => e.payload.slot)).toEqual(["2031-03-10T10:00:00.000Z"]);
    await remove(r.routine_id);
  });
});

describe("the routines API", () => {
  it("refuses a bad schedule or an unknown employee with 422 naming the field, creating nothing", async () => {
    await putEmployee("rt-api");
    const before = await count("SELECT count(*) AS n FROM routines");
    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [
        { employee_id: "rt-api", schedule: { cron: "61 * * * *" } },
        "schedule.cron",
        /not a valid cron expression: minute: 61 is outside 0-59/,
      ],
      [{ employee_id: "rt-api", schedule: { cron: "0 0 30 2 *" } }, "schedule.cron", /matches no date/],
      [{ employee_id: "rt-api", schedule: { every_minutes: 0 } }, "schedule.every_minutes", /./],
      [{ employee_id: "rt-api", schedule: { cron: "* * * * *", every_minutes: 5 } }, "schedule", /exactly one/],
      [{ employee_id: "nobody-here", schedule: { every_minutes: 5 } }, "employee_id", /unknown employee 'nobody-here'/],
      [{ employee_id: "rt-api", schedule: { every_minutes: 5 }, template: { title: "" } }, "template.title", /./],
    ];
    for (const [body, path, message] of cases) {
      const res = await call("/v1/routines", { body: { name: "n", template: GOAL, ...body } });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.code).toBe("validation_failed");
      expect(res.body.errors, JSON.stringify(res.body)).toEqual(
        expect.arrayContaining([{ path, message: expect.stringMatching(message) }]),
      );
    }
    expect(await count("SELECT count(*) AS n FROM routines")).toBe(before);
  });

  it("lets a manager create, change and delete, and a viewer only read", async () => {
    await putEmployee("rt-roles");
    await putEmployee("rt-other");
    const viewer = await createOperator("viewer", "routines-viewer");
    const manager = await createOperator("manager", "routines-manager");
    const body = { employee_id: "rt-roles", name: "daily", schedule: { cron: "@daily" }, template: GOAL };
    expect((await call("/v1/routines", { body, token: viewer })).status).toBe(403);
    const made = await call("/v1/routines", { body, token: manager });
    expect(made.status).toBe(201);
    const id = made.body.routine_id as string;
    expect(id).toMatch(/^rtn_[0-9a-f]{16}$/);
    expect(made.body.created_by).toMatch(/^op_/);
    expect(made.body.template).toEqual({ ...GOAL, tags: [], priority: "medium" });
    await call("/v1/routines", { body: { ...body, employee_id: "rt-other" } });

    const mine = await call("/v1/routines?employee_id=rt-roles", { token: viewer });
    expect(mine.status).toBe(200);
    expect(mine.body.routines.map((r: any) => r.routine_id)).toEqual([id]);
    expect((await call(`/v1/routines/${id}`, { token: viewer })).body).toMatchObject({ routine_id: id, recent_outcomes: [] });
    expect((await call(`/v1/routines/${id}`, { method: "PATCH", body: { name: "x" }, token: viewer })).status).toBe(403);
    expect((await call(`/v1/routines/${id}`, { method: "DELETE", token: viewer })).status).toBe(403);

    const renamed = await call(`/v1/routines/${id}`, { method: "PATCH", body: { name: "every day", revision: 1 }, token: manager });
    expect(renamed.body).toMatchObject({ name: "every day", revision: 2 });
    const stale = await call(`/v1/routines/${id}`, { method: "PATCH", body: { name: "late", revision: 1 }, token: manager });
    expect(stale.status).toBe(409);
    expect(stale.body.code).toBe("conflict");
    expect((await call(`/v1/routines/${id}`, { method: "PATCH", body: {}, token: manager })).status).toBe(422);

    expect((await call(`/v1/routines/${id}`, { method: "DELETE", token: manager })).body).toEqual({ routine_id: id, deleted: true });
    expect((await call(`/v1/routines/${id}`)).status).toBe(404);
    expect((await call(`/v1/routines/${id}`, { method: "DELETE" })).status).toBe(404);
    expect((await call("/v1/routines/not-an-id")).status).toBe(422);
    const events = (await call(`/v1/events?type=routine.&subject=${id}`)).body.events.map((e: any) => e.type);
    expect(events).toEqual(["routine.created", "routine.updated", "routine.deleted"]);
    for (const r of (await call("/v1/routines?employee_id=rt-other")).body.routines) await remove(r.routine_id);
  });
});
