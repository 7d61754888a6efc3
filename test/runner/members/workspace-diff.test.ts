/**
 * The pure half of an employee turn's workspace evidence: snapshot diff, the scan order a capped scan
 * relies on, which paths get receipts in which order, and the report's counts and truncation.
 */
import { describe, expect, it } from "vitest";
import {
  CHANGE_LIMIT,
  comparePaths,
  diffSnapshots,
  receiptPaths,
  workspaceReport,
} from "../../../local-runner/src/members/workspace-diff.ts";
import type { FileStamp, WorkspaceSnapshot } from "../../../local-runner/src/members/workspace-diff.ts";

const snap = (files: Record<string, [number, number]>, partial = false): WorkspaceSnapshot => ({
  files: new Map<string, FileStamp>(Object.entries(files).map(([p, [size, mtimeMs]]) => [p, { size, mtimeMs }])),
  partial,
});

describe("diffSnapshots", () => {
  it("reports created, modified (size or mtime) and deleted files, sorted by path, and nothing for unchanged ones", () => {
    const before = snap({ "b.md": [1, 10], "keep.md": [5, 10], "grow.md": [3, 10], "touch.md": [3, 10], "gone.md": [2, 10] });
    const after = snap({ "b.md": [1, 10], "keep.md": [5, 10], "grow.md": [4, 10], "touch.md": [3, 11], "a/new.md": [7, 20] });
    expect(diffSnapshots(before, after)).toEqual({
      changes: [
        { path: "a/new.md", change: "created" },
        { path: "gone.md", change: "deleted" },
        { path: "grow.md", change: "modified" },
        { path: "touch.md", change: "modified" },
      ],
      partial: false,
    });
  });

  it("reports no change between two identical snapshots", () => {
    const files = { "x.md": [1, 1] as [number, number] };
    expect(diffSnapshots(snap(files), snap(files))).toEqual({ changes: [], partial: false });
  });

  it("with a capped scan, leaves out the part of the tree past its last path instead of calling it created or deleted", () => {
    // Before saw a.md and b.md before its cap; after (full) sees a new c.md and d.md beyond that point.
    const before = snap({ "a.md": [1, 1], "b.md": [1, 1] }, true);
    const after = snap({ "a.md": [2, 2], "b.md": [1, 1], "c.md": [1, 1], "d.md": [1, 1] });
    expect(diffSnapshots(before, after)).toEqual({ changes: [{ path: "a.md", change: "modified" }], partial: true });
    // The other way round: files past the after scan's cap are not "deleted".
    expect(diffSnapshots(after, before)).toEqual({ changes: [{ path: "a.md", change: "modified" }], partial: true });
  });

  it("uses the earlier of two capped scans' frontiers, in the scan's own (component-wise) order", () => {
    // "a/z.md" comes before "a-b.md" in scan order ("a" < "a-b" as names), though not as plain strings.
    const before = snap({ "a/y.md": [1, 1], "a/z.md": [1, 1] }, true);
    const after = snap({ "a/y.md": [1, 1], "a/z.md": [9, 9], "a-b.md": [1, 1] }, true);
    expect(diffSnapshots(before, after).changes).toEqual([{ path: "a/z.md", change: "modified" }]);
  });

  it("reports nothing at all when a capped scan saw no file", () => {
    expect(diffSnapshots(snap({}, true), snap({ "a.md": [1, 1] })).changes).toEqual([]);
  });
});

describe("comparePaths", () => {
  it("orders paths as a depth-first scan with sorted entries meets them", () => {
    const paths = ["a-b.md", "a/z.md", "b.md", "a/b/c.md", "A.md"];
    expect([...paths].sort(comparePaths)).toEqual(["A.md", "a/b/c.md", "a/z.md", "a-b.md", "b.md"]);
  });
});

describe("receiptPaths", () => {
  const changes = [
    { path: "a.md", change: "created" as const },
    { path: "b.md", change: "modified" as const },
    { path: "c.md", change: "deleted" as const },
  ];

  it("puts the re-check paths first, as sent, then the changes not already among them", () => {
    expect(receiptPaths(changes, ["z/old.md", "./b.md", "z/old.md"], 64)).toEqual({
      paths: ["z/old.md", "./b.md", "a.md", "c.md"],
      truncated: false,
    });
  });

  it("keeps the first `limit` paths and says it truncated", () => {
    const many = Array.from({ length: 70 }, (_, i) => ({ path: `f${String(i).padStart(2, "0")}.md`, change: "created" as const }));
    const chosen = receiptPaths(many, ["r1.md", "r2.md"], 64);
    expect(chosen.truncated).toBe(true);
    expect(chosen.paths).toHaveLength(64);
    expect(chosen.paths.slice(0, 3)).toEqual(["r1.md", "r2.md", "f00.md"]);
    expect(chosen.paths.at(-1)).toBe("f61.md");
    expect(receiptPaths(many.slice(0, 64), [], 64).truncated).toBe(false);
  });
});

describe("workspaceReport", () => {
  it("counts every change and lists at most CHANGE_LIMIT of them, truncated when receipts or changes were cut", () => {
    const changes = Array.from({ length: CHANGE_LIMIT + 5 }, (_, i) => ({
      path: `f${String(i).padStart(3, "0")}.md`,
      change: (i % 3 === 0 ? "created" : i % 3 === 1 ? "modified" : "deleted") as "created" | "modified" | "deleted",
    }));
    const report = workspaceReport({ changes, partial: false }, false, 512);
    expect(report).toMatchObject({ scan: "full", created: 69, modified: 68, deleted: 68, truncated: true });
    expect(report.changes).toHaveLength(CHANGE_LIMIT);
    expect(workspaceReport({ changes: changes.slice(0, 3), partial: true }, false, 512)).toEqual({
      scan: "partial",
      created: 1,
      modified: 1,
      deleted: 1,
      truncated: false,
      changes: changes.slice(0, 3),
    });
    expect(workspaceReport({ changes: [], partial: false }, true, 512).truncated).toBe(true);
  });

  it("clips a path longer than the Worker takes", () => {
    const long = `${"d/".repeat(300)}x.md`;
    const [change] = workspaceReport({ changes: [{ path: long, change: "created" }], partial: false }, false, 512).changes;
    expect(change!.path).toHaveLength(512);
    expect(change!.path.endsWith("…")).toBe(true);
  });
});
