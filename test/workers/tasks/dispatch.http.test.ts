import { env } from "cloudflare:workers";
import { count, eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { events, tasks } from "../../../src/db/schema";
import { call } from "../../factories";
import { advanceClock, createTask, newTask, putEmployee, setConfig } from "../../factories/org";

const counts = async () => {
  const db = getDb(env.DB);
  return { tasks: (await db.select({ n: count() }).from(tasks).get())!.n, events: (await db.select({ n: count() }).from(events).get())!.n };
};

describe("dispatch policies", () => {
  it("round_robin rotates through the class's roster, skipping employees that do not exist", async () => {
    for (const id of ["rr-lead", "rr-a", "rr-b"]) await putEmployee(id);
    await setConfig("dispatch", { policy: "round_robin", rosters: { ops: ["rr-a", "rr-gone", "rr-b"] } });
    const picks = [];
    for (let i = 0; i < 5; i++) picks.push(await createTask({ assignee: "rr-lead", tags: ["ops"] }));
    expect(picks.map((p) => p.assigned_to)).toEqual(["rr-a", "rr-b", "rr-a", "rr-b", "rr-a"]);
    expect(picks.every((p) => p.routed_by === "round_robin")).toBe(true);
    expect((await call(`/v1/tasks/${picks[0]!.task_id}`)).body.route).toEqual({ policy: "round_robin", roster: ["rr-a", "rr-b"] });
  });

  it("round_robin falls back to the hierarchy for a class without a roster, and says so", async () => {
    await putEmployee("rr-solo");
    await setConfig("dispatch", { policy: "round_robin", rosters: {} });
    const t = await createTask({ assignee: "rr-solo", tags: ["misc"] });
    expect(t).toMatchObject({ assigned_to: "rr-solo", routed_by: "hierarchy" });
    expect((await call(`/v1/tasks/${t.task_id}`)).body.route).toEqual({ policy: "round_robin", fallback: "roster_empty" });
    await setConfig("dispatch", {});
  });

  it("validates the dispatch sections", async () => {
    expect((await call("/v1/config/dispatch", { method: "PUT", body: { policy: "random" } })).status).toBe(422);
    expect((await call("/v1/config/dispatch", { method: "PUT", body: { rosters: { ops: ["Not An Id"] } } })).status).toBe(422);
    expect((await call("/v1/config/dispatch_guard", { method: "PUT", body: { max_in_window: 0 } })).status).toBe(422);
    expect((await call("/v1/config/dispatch_guard")).body).toEqual({ max_in_window: 20, window_secs: 60, role_team_max_in_window: 60 });
    expect((await call("/v1/config/dispatch")).body).toMatchObject({
      policy: "fixed_hierarchy",
      rosters: {},
      llm_select: { wait_ms: 15_000 },
    });
  });
});

describe("[dispatch_guard]", () => {
  it("allows 20 dispatches per employee per minute; the 21st is 429 and creates nothing", async () => {
    await putEmployee("busy");
    await putEmployee("calm");
    for (let i = 0; i < 20; i++) expect((await newTask({ assignee: "busy" })).status).toBe(201);
    const before = await counts();
    const refused = await newTask({ assignee: "busy" });
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ code: "rate_limited", employee_id: "busy", limit: 20, window_secs: 60 });
    expect(refused.body.retry_after_ms).toBeGreaterThan(0);
    expect(await counts()).toEqual(before);
    // Per employee: someone else is not affected; after the window the employee has room again.
    expect((await newTask({ assignee: "calm" })).status).toBe(201);
    await advanceClock(61_000);
    expect((await newTask({ assignee: "busy" })).status).toBe(201);
  });

  it("round_robin passes over a member at its limit to the next one with room, and answers 429 only when all are full", async () => {
    for (const id of ["rg-lead", "rg-a", "rg-b"]) await putEmployee(id);
    await setConfig("dispatch_guard", { max_in_window: 2, window_secs: 60 });
    await setConfig("dispatch", { policy: "round_robin", rosters: { rg: ["rg-a", "rg-b"] } });
    // rg-a's window is full from work outside the roster (a class without one goes by the hierarchy).
    for (let i = 0; i < 2; i++) expect((await createTask({ assignee: "rg-a", tags: ["other"] })).assigned_to).toBe("rg-a");

    const first = await createTask({ assignee: "rg-lead", tags: ["rg"] });
    expect(first).toMatchObject({ assigned_to: "rg-b", routed_by: "round_robin" });
    expect((await call(`/v1/tasks/${first.task_id}`)).body.route).toEqual({
      policy: "round_robin",
      roster: ["rg-a", "rg-b"],
      skipped_at_limit: ["rg-a"],
    });
    expect((await createTask({ assignee: "rg-lead", tags: ["rg"] })).assigned_to).toBe("rg-b");
    const before = await counts();
    const full = await newTask({ assignee: "rg-lead", tags: ["rg"] });
    expect(full.status).toBe(429);
    expect(full.body).toMatchObject({ code: "rate_limited", roster: ["rg-a", "rg-b"], limit: 2 });
    expect(full.body.retry_after_ms).toBeGreaterThan(0);
    expect(await counts()).toEqual(before);

    // Once the window has passed, the turn is where the skips left it: rg-a's.
    await advanceClock(61_000);
    expect((await createTask({ assignee: "rg-lead", tags: ["rg"] })).assigned_to).toBe("rg-a");
    await setConfig("dispatch", {});
    await setConfig("dispatch_guard", {});
  });

  it("admits exactly the limit when dispatches race", async () => {
    await putEmployee("racer");
    await setConfig("dispatch_guard", { max_in_window: 5, window_secs: 60 });
    const results = await Promise.all(Array.from({ length: 12 }, () => newTask({ assignee: "racer" })));
    expect(results.filter((r) => r.status === 201)).toHaveLength(5);
    expect(results.filter((r) => r.status === 429)).toHaveLength(7);
    const rows = await getDb(env.DB).select({ n: count() }).from(tasks).where(eq(tasks.assignedTo, "racer")).get();
    expect(rows!.n).toBe(5);
    await setConfig("dispatch_guard", {});
  });
});
