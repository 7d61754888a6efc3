import { env } from "cloudflare:workers";
import { eq, like } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { events, settings, topologyDriver, topologyEvidenceDays } from "../../../src/db/schema";
import { loadEvidenceCells } from "../../../src/topology/evidence-sql";
import { call } from "../../factories";
import { advanceClock, DONE, FAILED, manager, setConfig, settledTasks, team, tick } from "../../factories/org";

/*
 * The tick's one batch (src/topology/driver.ts): it builds on what the last tick in this isolate saw
 * (the section's text and the fold watermark) and checks that inside the batch; a quiet tick writes
 * nothing but its claim; a fold step happens inside the batch. The story, guard and disabled tests
 * cover the rules; these cover the paths the batch added.
 */

const db = () => getDb(env.DB);
const DAY = 86_400_000;
const driver = async () => (await db().select().from(topologyDriver).where(eq(topologyDriver.id, 1)).get())!;
const topologyEvents = async () => (await db().select().from(events).where(like(events.type, "topology.%")).all()).length;
const clockNow = async () => new Date((await call("/v1/admin/clock")).body.now);

/** Moves the test clock at least a minute on, to the middle of a fold step (so the next ticks fold nothing new). */
async function midStep() {
  const now = (await clockNow()).getTime();
  const step = 600_000;
  let target = Math.floor(now / step) * step + step / 2;
  while (target < now + 61_000) target += step;
  await advanceClock(target - now);
}

describe("the topology tick's batch", () => {
  it("re-reads a section changed since this isolate's last tick, and acts on the new values at once", async () => {
    await manager("ana");
    await team("t1-lead", ["t1-a", "t1-b"]);
    await setConfig("topology_evolution", { enabled: true, tick_secs: 60, min_samples: 5 });
    await settledTasks("t1-a", "cfg", [FAILED, FAILED, FAILED, DONE]);
    await settledTasks("t1-b", "cfg", [DONE, DONE, DONE, DONE]);
    const first = await tick("topology");
    expect(first).toMatchObject({ ran: true, proposal: { proposal_id: null, reason: "no_candidate" } });

    // Written straight into D1 (no isolate cache can know): four samples are now enough.
    await db()
      .update(settings)
      .set({ value: { enabled: true, tick_secs: 60, min_samples: 4 } })
      .where(eq(settings.section, "topology_evolution"));
    const second = await tick("topology");
    expect(second.batches).toBe(2);
    expect(second.proposal).toMatchObject({ task_class: "cfg", from_agent: "t1-a", to_agent: "t1-b", status: "pending" });
    // The next tick builds on what that one saw: one batch, and the proposal holds the edge.
    await advanceClock(61_000);
    const third = await tick("topology");
    expect(third.batches).toBe(1);
    expect(third.proposal.skipped).toContainEqual({ task_class: "cfg", agent: "t1-a", reason: "pending_proposal" });
  });

  it("writes nothing once D5 is off, though this isolate last saw it on", async () => {
    await setConfig("topology_evolution", { enabled: true, tick_secs: 60 });
    await advanceClock(61_000);
    expect((await tick("topology")).ran).toBe(true);
    const before = await driver();
    const eventsBefore = await topologyEvents();

    await setConfig("topology_evolution", { enabled: false, tick_secs: 60 });
    await advanceClock(61_000);
    expect(await tick("topology")).toEqual({ enabled: false });
    expect(await driver()).toEqual(before);
    expect(await topologyEvents()).toBe(eventsBefore);
  });

  it("ends a tick with nothing to write after its batch, a proposal awaiting its human included: only its claim is written", async () => {
    await manager("quiet");
    await team("t3-lead", ["t3-a", "t3-b"]);
    await setConfig("topology_evolution", { enabled: true, tick_secs: 60, min_samples: 4 });
    await settledTasks("t3-a", "quiet", [FAILED, FAILED, FAILED, DONE]);
    await settledTasks("t3-b", "quiet", [DONE, DONE, DONE, DONE]);
    await advanceClock(61_000);
    const proposed = await tick("topology");
    expect(proposed.proposal).toMatchObject({ task_class: "quiet", from_agent: "t3-a", status: "pending" });
    await midStep();
    await tick("topology"); // whatever else is due (a fold step) happens here
    const counters = await db().select().from(topologyEvidenceDays).all();
    const eventsBefore = await topologyEvents();
    const before = await driver();

    const quiet = await tick("topology");
    expect(quiet).toMatchObject({ ran: true, batches: 1 });
    // The proposal's approval is read in the batch as still open: no poll, nothing to resolve.
    expect(quiet.resolved).toContainEqual({ proposal_id: proposed.proposal.proposal_id, outcome: "pending" });
    expect(quiet.ms.lease).toBeUndefined(); // never took the driver for writing
    const after = await driver();
    expect(after.leaseUntil).toBeNull();
    expect(after.lastTickAt! > before.lastTickAt!).toBe(true);
    expect({ ...after, lastTickAt: null, leaseToken: null }).toEqual({ ...before, lastTickAt: null, leaseToken: null });
    expect(await db().select().from(topologyEvidenceDays).all()).toEqual(counters);
    expect(await topologyEvents()).toBe(eventsBefore);
  });

  it("moves the fold watermark inside its batch as the clock passes a step, and counts what counting every task counts", async () => {
    await manager("fold");
    await team("t4-lead", ["t4-a", "t4-b"]);
    await setConfig("topology_evolution", { enabled: true, tick_secs: 60 });
    await settledTasks("t4-a", "fold", [FAILED, DONE, { status: "done", retry_count: 2 }]);
    await advanceClock(61_000);
    await tick("topology");
    const start = await driver();
    expect(start.foldedThrough).not.toBeNull();

    // Twenty-five minutes on (two or three fold steps), more tasks settle after the watermark.
    await advanceClock(25 * 60_000);
    await settledTasks("t4-a", "fold", [FAILED, { status: "needs_human", pause_class: "no_progress" }]);
    await settledTasks("t4-b", "fold", [DONE]);
    const stepped = await tick("topology");
    expect(stepped).toMatchObject({ ran: true, batches: 1 });
    const moved = await driver();
    expect(moved.foldedThrough! > start.foldedThrough!).toBe(true);
    expect(moved.foldedFrom).toBe(start.foldedFrom);

    const since = new Date((await clockNow()).getTime() - 14 * DAY).toISOString();
    const fromCounters = await loadEvidenceCells(db(), since, { from: moved.foldedFrom!, through: moved.foldedThrough! });
    const fromTasks = await loadEvidenceCells(db(), since, null);
    expect(fromCounters).toEqual(fromTasks);
    expect(fromTasks.find((c) => c.agent === "t4-a" && c.task_class === "fold")).toEqual({
      agent: "t4-a",
      task_class: "fold",
      samples: 5,
      rejects: 4,
      needs_human: 1,
      oscillations: 1,
    });
  });

  it("starts its evidence over when the watermark changed under it, on a second batch", async () => {
    await manager("reset");
    await team("t5-lead", ["t5-a", "t5-b"]);
    await setConfig("topology_evolution", { enabled: true, tick_secs: 60 });
    await advanceClock(61_000);
    await tick("topology");
    // Another writer (here: the test) throws the counters away, as the bench does between sizes.
    await db().batch([db().delete(topologyEvidenceDays), db().update(topologyDriver).set({ foldedFrom: null, foldedThrough: null })]);
    await settledTasks("t5-a", "reset", [FAILED, FAILED, FAILED, FAILED, DONE]);
    await settledTasks("t5-b", "reset", [DONE, DONE, DONE, DONE, DONE]);
    await advanceClock(61_000);

    const refolded = await tick("topology");
    expect(refolded.batches).toBe(2);
    expect(refolded.ms).toHaveProperty("fold"); // the full fold, timed apart from the proposal step
    expect(refolded.proposal).toMatchObject({ task_class: "reset", from_agent: "t5-a", to_agent: "t5-b" });
    expect((await driver()).foldedThrough).not.toBeNull();
  });

  it("starts its counters over at the window's new first day when lookback_days is raised, then builds on them", async () => {
    await manager("longer");
    await setConfig("topology_evolution", { enabled: true, tick_secs: 60, lookback_days: 14 });
    await settledTasks("t5-a", "longer", [FAILED, DONE]);
    await advanceClock(61_000);
    await tick("topology");
    const before = await driver();

    await setConfig("topology_evolution", { enabled: true, tick_secs: 60, lookback_days: 30 });
    await advanceClock(61_000);
    const refolded = await tick("topology");
    expect(refolded.ms).toHaveProperty("fold");
    const after = await driver();
    expect(after.foldedFrom! < before.foldedFrom!).toBe(true);
    const since = new Date((await clockNow()).getTime() - 30 * DAY).toISOString();
    expect(after.foldedFrom).toBe(`${since.slice(0, 10)}T00:00:00.000Z`);
    const fromCounters = await loadEvidenceCells(db(), since, { from: after.foldedFrom!, through: after.foldedThrough! });
    expect(fromCounters).toEqual(await loadEvidenceCells(db(), since, null));

    await advanceClock(61_000);
    const next = await tick("topology");
    expect(next).toMatchObject({ ran: true, batches: 1 });
    expect(next.ms).not.toHaveProperty("fold");
  });
});
