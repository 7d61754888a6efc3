import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { tasks } from "../../../src/db/schema";
import {
  computeEvidence,
  isReject,
  loadEvidenceCells,
  loadSampleTaskIds,
  sampleTaskIds,
  type EvidenceTask,
} from "../../../src/topology/evidence";

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

describe("the SQL aggregate", () => {
  it("computes exactly the cells and sample ids of the pure function on the same tasks", async () => {
    const db = getDb(env.DB);
    const set: EvidenceTask[] = [];
    const agents = ["alice", "bob", "carol"];
    const classes = ["billing", "support", "high"];
    const statuses: EvidenceTask["status"][] = ["done", "needs_human", "failed", "assigned"];
    const pauses = ["no_progress", "infra", "unknown"] as const;
    for (let i = 0; i < 120; i++) {
      const status = statuses[(i * 7) % 4]!;
      set.push(
        t(agents[i % 3]!, classes[Math.floor(i / 3) % 3]!, status, {
          mode: i % 11 === 0 ? "plain" : "goal",
          retry_count: i % 4 === 0 ? 1 : 0,
          pause_class: status === "needs_human" ? pauses[i % 3]! : null,
          settled_at: status === "assigned" ? null : new Date(Date.parse("2026-10-25T00:00:00Z") + i * 3_600_000 * 6).toISOString(),
        }),
      );
    }
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
    const expected = computeEvidence(set, SINCE);
    expect(expected.length).toBeGreaterThan(4);
    expect(await loadEvidenceCells(db, SINCE)).toEqual(expected);
    for (const cell of expected) {
      expect(await loadSampleTaskIds(db, SINCE, cell.agent, cell.task_class)).toEqual(
        sampleTaskIds(set, SINCE, cell.agent, cell.task_class),
      );
    }
  });
});
