import { env } from "cloudflare:workers";
import { count, gt, like } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { approvals, employees, events, routingOverrides, settings, tasks, topologyDriver, topologyProposals } from "../../../src/db/schema";
import { call } from "../../factories";
import { createTask, DONE, FAILED, manager, NEEDS_HUMAN, setConfig, settle, settledTasks, team, tick } from "../../factories/org";

const db = () => getDb(env.DB);

/** An active override for (billing, <p>-a) → <p>-b, written straight into D1: D5 off must ignore it. */
async function plantOverride(prefix: string, overrides: Partial<typeof routingOverrides.$inferInsert> = {}) {
  const hex = Array.from(prefix, (c) => c.charCodeAt(0).toString(16))
    .join("")
    .padEnd(16, "0")
    .slice(0, 16);
  await db()
    .insert(routingOverrides)
    .values({
      id: `ovr_${hex}`,
      proposalId: `tprop_${hex}`,
      approvalId: `apr_${hex}`,
      taskClass: "billing",
      fromAgent: `${prefix}-a`,
      toAgent: `${prefix}-b`,
      status: "active",
      approvedAt: "2026-01-01T00:00:00.000Z",
      observeUntil: "2099-01-01T00:00:00.000Z",
      baselineRejectRate: 0.8,
      baselineSamples: 5,
      ...overrides,
    });
}

/** One dispatch sequence on employees named <prefix>-…: tasks, settles, ticks. Returns what it wrote. */
async function dispatchSequence(prefix: string) {
  const startEvent =
    (await db().select({ n: count() }).from(events).get())!.n === 0 ? 0 : (await db().select().from(events).all()).at(-1)!.id;
  await team(`${prefix}-lead`, [`${prefix}-a`, `${prefix}-b`]);
  await plantOverride(prefix);
  await settledTasks(`${prefix}-a`, "billing", [FAILED, FAILED, NEEDS_HUMAN, DONE, { status: "done", retry_count: 1 }]);
  await settledTasks(`${prefix}-b`, "billing", [DONE, DONE, DONE, DONE, DONE]);
  const plain = await createTask({ assignee: `${prefix}-a`, mode: "plain", priority: "high" });
  await settle(plain.task_id, { status: "needs_human", pause_class: "infra" });
  await tick("topology");
  await tick("approvals");
  await createTask({ assignee: `${prefix}-a`, tags: ["billing"], acceptance_criteria: ["green"] });
  await createTask({ assignee: `${prefix}-b`, tags: ["billing"] });

  const taskRows = await db()
    .select()
    .from(tasks)
    .where(like(tasks.assignee, `${prefix}-%`))
    .orderBy(tasks.createdAt, tasks.id);
  const employeeRows = await db()
    .select()
    .from(employees)
    .where(like(employees.id, `${prefix}-%`))
    .orderBy(employees.id);
  const eventRows = await db().select().from(events).where(gt(events.id, startEvent)).orderBy(events.id);
  return normalize(prefix, { tasks: taskRows, employees: employeeRows, events: eventRows });
}

/** Ids and times aside: the same sequence must write the same rows and events, byte for byte. */
function normalize(prefix: string, written: unknown) {
  const ids = new Map<string, string>();
  const text = JSON.stringify(written)
    .replaceAll(`${prefix}-`, "P-")
    .replace(/task_[0-9a-f]{16}/g, (id) => ids.get(id) ?? (ids.set(id, `task#${ids.size + 1}`), ids.get(id)!))
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g, "<time>")
    .replace(/"id":\d+/g, '"id":0');
  return JSON.parse(text);
}

describe("topology_evolution off is byte-identical to no D5", () => {
  it("writes the same rows and events with the section absent and with enabled = false, and ignores overrides", async () => {
    await manager("decider"); // a broker that could answer, so D5 would act if anything reached it
    expect(await db().select().from(settings).all()).toEqual([]);
    const absent = await dispatchSequence("x");

    await setConfig("topology_evolution", { enabled: false, min_samples: 1, reject_rate_threshold: 0.1, tick_secs: 60 });
    const disabled = await dispatchSequence("y");

    expect(JSON.stringify(disabled)).toBe(JSON.stringify(absent));
    // Nothing of D5 was read into routing or written: no proposal, no approval, no driver row, overrides untouched.
    for (const t of absent.tasks) expect(t.routedBy).toBe("hierarchy");
    expect(await db().select().from(topologyProposals).all()).toEqual([]);
    expect(await db().select().from(approvals).all()).toEqual([]);
    expect(await db().select().from(topologyDriver).all()).toEqual([]);
    expect((await db().select().from(routingOverrides).all()).map((o) => o.status)).toEqual(["active", "active"]);
    expect(absent.events.map((e: { type: string }) => e.type)).not.toContain("topology.proposed");

    // The same sequence with D5 on is different (the planted override applies), so the comparison can fail.
    await setConfig("topology_evolution", { enabled: true, tick_secs: 60 });
    const enabled = await dispatchSequence("z");
    expect(JSON.stringify(enabled)).not.toBe(JSON.stringify(absent));
    expect(enabled.tasks.filter((t: { routedBy: string }) => t.routedBy === "override")).toHaveLength(1);
  });
});

describe("a missing or unreadable override reads as no override", () => {
  it("routes by the hierarchy when the override's to_agent is gone or the row does not parse", async () => {
    await setConfig("topology_evolution", { enabled: true });
    await team("u-lead", ["u-a"]);
    await plantOverride("u", { toAgent: "u-nobody" });
    expect((await createTask({ assignee: "u-a", tags: ["billing"] })).routed_by).toBe("hierarchy");
    await team("v-lead", ["v-a", "v-b"]);
    await plantOverride("v", { id: "not-an-override-id" });
    expect((await createTask({ assignee: "v-a", tags: ["billing"] })).routed_by).toBe("hierarchy");
    await team("w-lead", ["w-a", "w-b"]);
    await plantOverride("w");
    expect((await createTask({ assignee: "w-a", tags: ["billing"] })).routed_by).toBe("override");
    expect((await call("/v1/topology")).status).toBe(200);
  });
});

describe("overrides under round_robin and llm_select", () => {
  it("apply only when the class's roster is empty and dispatch falls back to the hierarchy", async () => {
    await setConfig("topology_evolution", { enabled: true });
    await team("r-lead", ["r-a", "r-b", "r-c"]);
    await plantOverride("r");
    await setConfig("dispatch", { policy: "round_robin", rosters: { billing: ["r-c"] } });
    expect(await createTask({ assignee: "r-a", tags: ["billing"] })).toMatchObject({ assigned_to: "r-c", routed_by: "round_robin" });
    await setConfig("dispatch", { policy: "round_robin", rosters: {} });
    const fallback = await createTask({ assignee: "r-a", tags: ["billing"] });
    expect(fallback).toMatchObject({ assigned_to: "r-b", routed_by: "override" });
    expect((await call(`/v1/tasks/${fallback.task_id}`)).body.route).toMatchObject({ policy: "round_robin", fallback: "roster_empty" });
    await setConfig("dispatch", { policy: "llm_select", rosters: {} });
    expect(await createTask({ assignee: "r-a", tags: ["billing"] })).toMatchObject({ assigned_to: "r-b", routed_by: "override" });
    await setConfig("dispatch", {});
  });
});
