import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { tasks } from "../../../src/db/schema";
import {
  ceilDay,
  computeEvidence,
  evidencePlan,
  floorDay,
  isReject,
  sampleTaskIds,
  type EvidenceTask,
  type FoldedRange,
} from "../../../src/topology/evidence";
import { evidenceSql, foldEvidence, loadEvidenceCells, loadSampleTaskIds } from "../../../src/topology/evidence-sql";

const SINCE = "2026-11-01T00:00:00.000Z";
let n = 0;
function t(agent: string, task_class: string, status: EvidenceTask["status"], extra: Partial<EvidenceTask> = {}): EvidenceTask {
  n++;
  return {
    id: `task_${n.toString(16).padStart(16, "0")}`,
    agent,
    task_class,
    mode: "goal",
    status,
    retry_count: 0,
    pause_class: status === "needs_human" ? "unknown" : null,
    settled_at: status === "assigned" ? null : `2026-11-10T00:00:${String(n % 60).padStart(2, "0")}.000Z`,
    ...extra,
  };
}

describe("isReject", () => {
  it("counts needs_human, failed and any retry, each task once", () => {
    expect(isReject({ status: "done", retry_count: 0 })).toBe(false);
    expect(isReject({ status: "done", retry_count: 2 })).toBe(true);
    expect(isReject({ status: "needs_human", retry_count: 0 })).toBe(true);
    expect(isReject({ status: "failed", retry_count: 3 })).toBe(true);
  });
});

describe("computeEvidence", () => {
  it("aggregates settled goal tasks per (agent, class): samples, rejects, needs_human, oscillations", () => {
    const cells = computeEvidence(
      [
        t("alice", "billing", "failed"),
        t("alice", "billing", "needs_human", { pause_class: "no_progress" }),
        t("alice", "billing", "needs_human", { retry_count: 1, pause_class: "budget_exhausted" }),
        t("alice", "billing", "done", { retry_count: 1 }),
        t("alice", "billing", "done"),
        t("alice", "support", "done"),
        t("bob", "billing", "done"),
      ],
      SINCE,
    );
    expect(cells).toEqual([
      { agent: "alice", task_class: "billing", samples: 5, rejects: 4, needs_human: 2, oscillations: 1 },
      { agent: "alice", task_class: "support", samples: 1, rejects: 0, needs_human: 0, oscillations: 0 },
      { agent: "bob", task_class: "billing", samples: 1, rejects: 0, needs_human: 0, oscillations: 0 },
    ]);
  });

  it("leaves out plain tasks, unsettled tasks and tasks settled before the window", () => {
    const cells = computeEvidence(
      [
        t("alice", "billing", "failed", { mode: "plain" }),
        t("alice", "billing", "assigned"),
        t("alice", "billing", "failed", { settled_at: "2026-10-31T23:59:59.999Z" }),
        t("alice", "billing", "failed", { settled_at: SINCE }),
      ],
      SINCE,
    );
    expect(cells).toEqual([{ agent: "alice", task_class: "billing", samples: 1, rejects: 1, needs_human: 0, oscillations: 0 }]);
  });

  it("returns nothing for nothing", () => {
    expect(computeEvidence([], SINCE)).toEqual([]);
  });
});

describe("sampleTaskIds", () => {
  it("keeps at most ten, rejections first, newest first", () => {
    const done = Array.from({ length: 8 }, (_, i) => t("alice", "billing", "done", { settled_at: `2026-11-20T00:00:0${i}.000Z` }));
    const failed = Array.from({ length: 4 }, (_, i) => t("alice", "billing", "failed", { settled_at: `2026-11-05T00:00:0${i}.000Z` }));
    const ids = sampleTaskIds([...done, ...failed, t("bob", "billing", "failed")], SINCE, "alice", "billing");
    expect(ids).toHaveLength(10);
    expect(ids.slice(0, 4)).toEqual(failed.map((f) => f.id).reverse());
    expect(ids.slice(4)).toEqual(
      done
        .map((d) => d.id)
        .reverse()
        .slice(0, 6),
    );
  });
});

describe("day boundaries and the evidence plan", () => {
  it("floors and ceils to UTC day boundaries", () => {
    expect(floorDay("2026-11-03T13:17:00.123Z")).toBe("2026-11-03T00:00:00.000Z");
    expect(ceilDay("2026-11-03T13:17:00.123Z")).toBe("2026-11-04T00:00:00.000Z");
    expect(ceilDay("2026-11-03T00:00:00.000Z")).toBe("2026-11-03T00:00:00.000Z");
    expect(ceilDay("2026-12-31T23:59:59.999Z")).toBe("2027-01-01T00:00:00.000Z");
  });

  it("counts whole folded days from counters and the rest from tasks, without overlap or gap", () => {
    const since = "2026-11-03T13:00:00.000Z";
    const folded = (from: string, through: string) => ({ from: `${from}T00:00:00.000Z`, through: `${through}T00:00:00.000Z` });
    expect(evidencePlan(since, null)).toEqual({ days: null, raw: [{ from: since, to: null }] });
    expect(evidencePlan(since, folded("2026-11-01", "2026-11-04")).days).toBeNull();
    expect(evidencePlan(since, folded("2026-11-01", "2026-11-10"))).toEqual({
      days: { from: "2026-11-04", to: "2026-11-10" },
      raw: [
        { from: since, to: "2026-11-04T00:00:00.000Z" },
        { from: "2026-11-10T00:00:00.000Z", to: null },
      ],
    });
    expect(evidencePlan("2026-11-03T00:00:00.000Z", folded("2026-11-01", "2026-11-10")).raw).toEqual([
      { from: "2026-11-10T00:00:00.000Z", to: null },
    ]);
    // Counters that begin inside the window: the days before them come from tasks.
    expect(evidencePlan(since, folded("2026-11-06", "2026-11-10"))).toEqual({
      days: { from: "2026-11-06", to: "2026-11-10" },
      raw: [
        { from: since, to: "2026-11-06T00:00:00.000Z" },
        { from: "2026-11-10T00:00:00.000Z", to: null },
      ],
    });
  });
});

describe("the SQL evidence (fold + one aggregate query)", () => {
  const set: EvidenceTask[] = [];
  const agents = ["alice", "bob", "carol"];
  const classes = ["billing", "support", "high"];
  const statuses: EvidenceTask["status"][] = ["done", "needs_human", "failed", "assigned"];
  const pauses = ["no_progress", "infra", "unknown"] as const;
  for (let i = 0; i < 140; i++) {
    const status = statuses[(i * 7) % 4]!;
    set.push(
      t(agents[i % 3]!, classes[Math.floor(i / 3) % 3]!, status, {
        mode: i % 11 === 0 ? "plain" : "goal",
        retry_count: i % 4 === 0 ? 1 : 0,
        pause_class: status === "needs_human" ? pauses[i % 3]! : null,
        settled_at: status === "assigned" ? null : new Date(Date.parse("2026-10-25T00:00:00Z") + i * 3_600_000 * 5 + 7_000).toISOString(),
      }),
    );
  }
  const windows = [
    "2026-10-20T00:00:00.000Z",
    "2026-11-01T00:00:00.000Z",
    "2026-11-03T13:17:00.000Z",
    "2026-11-14T05:00:00.000Z",
    "2026-11-29T00:00:00.000Z",
  ];

  async function expectSameAsPure(folded: FoldedRange | null) {
    const db = getDb(env.DB);
    for (const since of windows) {
      expect(await loadEvidenceCells(db, since, folded), `since ${since}, folded ${JSON.stringify(folded)}`).toEqual(
        computeEvidence(set, since),
      );
    }
  }

  it("counts exactly what the pure function counts, before and after folds at any window start", async () => {
    const db = getDb(env.DB);
    for (const x of set) {
      await db.insert(tasks).values({
        id: x.id,
        title: "t",
        mode: x.mode,
        tags: [x.task_class],
        priority: "medium",
        taskClass: x.task_class,
        acceptanceCriteria: [],
        assignee: x.agent,
        assignedTo: x.agent,
        routedBy: "hierarchy",
        route: { policy: "fixed_hierarchy" },
        status: x.status,
        retryCount: x.retry_count,
        pauseClass: x.pause_class,
        createdBy: "test",
        createdAt: "2026-10-20T00:00:00.000Z",
        settledAt: x.settled_at,
      });
    }
    expect(computeEvidence(set, windows[0]!).length).toBeGreaterThan(6);
    await expectSameAsPure(null);

    // The first fold starts at its window's first day (14 days back), not at the oldest task.
    const first = await foldEvidence(db, new Date("2026-11-15T00:30:00.000Z"), "2026-11-01T00:30:00.000Z");
    expect(first).toEqual({ folded: { from: "2026-11-01T00:00:00.000Z", through: "2026-11-14T00:00:00.000Z" }, advanced: true });
    await expectSameAsPure(first.folded);
    // Folding again before a new day is complete changes nothing.
    expect(await foldEvidence(db, new Date("2026-11-15T00:59:00.000Z"), "2026-11-01T00:59:00.000Z")).toEqual({
      folded: first.folded,
      advanced: false,
    });
    await expectSameAsPure(first.folded);

    // Three folds at once count each task once.
    const racing = await Promise.all(
      [1, 2, 3].map(() => foldEvidence(db, new Date("2026-12-01T02:00:00.000Z"), "2026-11-17T02:00:00.000Z")),
    );
    const expected = { from: "2026-11-01T00:00:00.000Z", through: "2026-12-01T00:00:00.000Z" };
    expect(racing.filter((r) => r.advanced)).toHaveLength(1);
    expect(racing.every((r) => JSON.stringify(r.folded) === JSON.stringify(expected))).toBe(true);
    await expectSameAsPure(expected);
    // The test clock set back before the folded days: the counters start over and stay exact.
    const back = await foldEvidence(db, new Date("2026-11-10T12:00:00.000Z"), "2026-10-27T12:00:00.000Z");
    expect(back).toEqual({ folded: { from: "2026-10-27T00:00:00.000Z", through: "2026-11-10T00:00:00.000Z" }, advanced: true });
    await expectSameAsPure(back.folded);
    for (const cell of computeEvidence(set, windows[0]!)) {
      expect(await loadSampleTaskIds(db, windows[0]!, cell.agent, cell.task_class)).toEqual(
        sampleTaskIds(set, windows[0]!, cell.agent, cell.task_class),
      );
    }
  });

  it("reads the tasks it counts through the covering partial index by settlement range, never a table scan", async () => {
    const folded = { from: "2026-11-01T00:00:00.000Z", through: "2026-11-20T00:00:00.000Z" };
    const built = getDb(env.DB).run(evidenceSql("2026-11-03T13:17:00.000Z", folded)).getQuery();
    const plan = await env.DB.prepare(`EXPLAIN QUERY PLAN ${built.sql}`)
      .bind(...built.params)
      .all<{ detail: string }>();
    const details = plan.results.map((r) => r.detail);
    expect(details.filter((d) => d.includes("tasks_evidence_idx"))).toHaveLength(2);
    expect(details.filter((d) => d.includes("tasks_evidence_idx")).every((d) => d.includes("SEARCH") && d.includes("settled_at>"))).toBe(
      true,
    );
    expect(details.some((d) => /SCAN tasks\b(?! USING)/.test(d))).toBe(false);
  });
});
