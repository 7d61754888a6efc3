import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getRateWindow } from "../../../src/durable-objects/rate-window-rpc";
import { loadClock } from "../../../src/lib/clock";
import { createTask, eventsOf, newTask, putEmployee, setConfig } from "../../factories/org";

const windowCount = async (id: string) =>
  (await getRateWindow(env, `dispatch:${id}`).peek({ windowMs: 60_000, now: (await loadClock(env)).nowMs() })).count;

describe("round_robin under concurrent dispatch", () => {
  it("gives each concurrent task its own turn: four at once over a roster of two land two and two", async () => {
    for (const id of ["rrr-lead", "rrr-a", "rrr-b"]) await putEmployee(id);
    await setConfig("dispatch", { policy: "round_robin", rosters: { race: ["rrr-a", "rrr-b"] } });
    const picks = await Promise.all(Array.from({ length: 4 }, () => createTask({ assignee: "rrr-lead", tags: ["race"] })));
    const to = picks.map((p) => p.assigned_to).sort();
    expect(to).toEqual(["rrr-a", "rrr-a", "rrr-b", "rrr-b"]);
    // A dispatch that lost a turn and retried left no stray event: one task.created per task.
    const created = (await eventsOf("task.created")).filter((e) => e.payload.task_class === "race");
    expect(created.map((e) => e.subject).sort()).toEqual(picks.map((p) => p.task_id).sort());
    // The class's turn moved on once per task: the next one continues the rotation.
    const next = await createTask({ assignee: "rrr-lead", tags: ["race"] });
    expect(next.assigned_to).toBe("rrr-a");
    await setConfig("dispatch", {});
  });
});

describe("round_robin skipping a full member under concurrent dispatch", () => {
  it("lands every task once while the roster has room, keeps each window at its limit and leaks no slot", async () => {
    for (const id of ["rrs-lead", "rrs-a", "rrs-b", "rrs-c"]) await putEmployee(id);
    await setConfig("dispatch_guard", { max_in_window: 3, window_secs: 60 });
    await setConfig("dispatch", { policy: "round_robin", rosters: { skiprace: ["rrs-a", "rrs-b", "rrs-c"] } });
    // rrs-a's window is full from work outside the roster.
    for (let i = 0; i < 3; i++) expect((await createTask({ assignee: "rrs-a", tags: ["elsewhere"] })).assigned_to).toBe("rrs-a");

    const answers = await Promise.all(Array.from({ length: 9 }, () => newTask({ assignee: "rrs-lead", tags: ["skiprace"] })));
    const landed = answers.filter((r) => r.status === 201).map((r) => r.body as { task_id: string; assigned_to: string });
    const refused = answers.filter((r) => r.status !== 201);
    // rrs-b and rrs-c have three slots each: six land, the rest are told every member is full.
    expect(landed.map((t) => t.assigned_to).sort()).toEqual(["rrs-b", "rrs-b", "rrs-b", "rrs-c", "rrs-c", "rrs-c"]);
    expect(refused.map((r) => [r.status, r.body.code])).toEqual([
      [429, "rate_limited"],
      [429, "rate_limited"],
      [429, "rate_limited"],
    ]);
    const created = (await eventsOf("task.created")).filter((e) => e.payload.task_class === "skiprace");
    expect(created.map((e) => e.subject).sort()).toEqual(landed.map((t) => t.task_id).sort());
    expect([await windowCount("rrs-a"), await windowCount("rrs-b"), await windowCount("rrs-c")]).toEqual([3, 3, 3]);
    await setConfig("dispatch", {});
    await setConfig("dispatch_guard", {});
  });

  it("answers 429 only when every member is full: as many concurrent tasks as the roster has slots all land", async () => {
    await setConfig("dispatch_guard", { max_in_window: 3, window_secs: 60 });
    // A slot a losing dispatch holds for a moment (it gives it back and takes the next turn) is not a
    // full window; the interleaving varies, so several rounds.
    for (let round = 0; round < 8; round++) {
      const ids = ["a", "b", "c"].map((m) => `rrf${round}-${m}`);
      for (const id of [`rrf${round}-lead`, ...ids]) await putEmployee(id);
      await setConfig("dispatch", { policy: "round_robin", rosters: { [`fit${round}`]: ids } });
      const answers = await Promise.all(Array.from({ length: 9 }, () => newTask({ assignee: `rrf${round}-lead`, tags: [`fit${round}`] })));
      expect(answers.map((a) => (a.status === 201 ? 201 : `${a.status} ${a.body.code}`))).toEqual(Array(9).fill(201));
      expect(await Promise.all(ids.map(windowCount))).toEqual([3, 3, 3]);
    }
    await setConfig("dispatch", {});
    await setConfig("dispatch_guard", {});
  });
});
