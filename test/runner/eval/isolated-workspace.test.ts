/**
 * Isolated workspaces of the team 2×2 (issue 22) on a real file system: made once as a copy of the
 * employee workspace with the case's files over it, never re-made, one consistent dir out of a
 * creation race, paths that escape refused; the janitor's sweep; the block a verifier reads.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  ISOLATED_WORKSPACE_KEEP_MS,
  MARKER,
  ensureIsolatedWorkspace,
  findIsolatedWorkspace,
  isolatedWorkspaceDir,
  isolatedWorkspacesRoot,
  sweepIsolatedWorkspaces,
  useIsolatedWorkspace,
} from "../../../local-runner/src/eval/isolated-workspace.ts";
import {
  isolatedWorkspace as isolatedWorkspaceSchema,
  observedWorkspace as observedWorkspaceSchema,
  workspacePathProblem,
} from "../../../src/jobs/isolated-workspace.ts";
import { WORKSPACE_FILES_BYTES, levelObserved, workspaceBlock } from "../../../local-runner/src/eval/workspace-block.ts";
import { observeFiles } from "../../../local-runner/src/eval/workspace.ts";
import { createMemoryLogger } from "../../../local-runner/src/logger.ts";
import { createWorkJanitor } from "../../../local-runner/src/work-janitor.ts";
import { tempDir } from "../helpers/paths.ts";

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function home(): string {
  const { dir, cleanup } = tempDir("crewplane-isows-");
  cleanups.push(cleanup);
  return dir;
}

/** An employee workspace with a few files, as an employee's earlier rounds leave it. */
function employee(h: string): string {
  const ws = join(h, "agents", "emp_1");
  mkdirSync(join(ws, "notes"), { recursive: true });
  mkdirSync(join(ws, "state", "working_state"), { recursive: true });
  writeFileSync(join(ws, "notes", "a.md"), "employee a\n");
  writeFileSync(join(ws, "README.md"), "employee readme\n");
  writeFileSync(join(ws, "state", "working_state", "task_1.md"), "state\n");
  return ws;
}

/** Every file under `dir` (relative path → content), the marker left out. */
function tree(dir: string, prefix = ""): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of readdirSync(join(dir, prefix), { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) Object.assign(out, tree(dir, rel));
    else if (rel !== MARKER) out[rel] = readFileSync(join(dir, rel), "utf8");
  }
  return out;
}

describe("workspacePathProblem and the payload schemas", () => {
  it.each(["a.md", "notes/a.md", "..a", ".hidden/x", "a b/c.md"])("accepts %s", (path) => {
    expect(workspacePathProblem(path)).toBeUndefined();
  });

  it.each(["", "/etc/passwd", "../x", "a/../b", "./a", "a/./b", "a//b", "a/", "a\\b", "a\0b", "x".repeat(257)])("refuses %j", (path) => {
    expect(workspacePathProblem(path)).toBeDefined();
  });

  it("holds the Worker's constraints: key pattern, relative paths, at most 64 observe paths", () => {
    expect(isolatedWorkspaceSchema.parse({ key: "case1.arm-ws" })).toEqual({ key: "case1.arm-ws", files: {} });
    expect(isolatedWorkspaceSchema.safeParse({ key: "../x", files: {} }).success).toBe(false);
    expect(isolatedWorkspaceSchema.safeParse({ key: ".hidden" }).success).toBe(false);
    expect(isolatedWorkspaceSchema.safeParse({ key: "k", files: { "../escape.md": "x" } }).success).toBe(false);
    expect(observedWorkspaceSchema.safeParse({ key: "k", observe_paths: ["a.md", "/abs"] }).success).toBe(false);
    expect(observedWorkspaceSchema.safeParse({ key: "k", observe_paths: Array.from({ length: 65 }, (_, i) => `f${i}`) }).success).toBe(
      false,
    );
    expect(() => isolatedWorkspaceDir("/h", "a/b")).toThrow(/invalid isolated workspace key/);
  });
});

describe("ensureIsolatedWorkspace", () => {
  it("creates <home>/eval-workspaces/<key>/ as a copy of the employee workspace with the files written over it", async () => {
    const h = home();
    const source = employee(h);
    const made = await ensureIsolatedWorkspace(
      h,
      { key: "case1-arm-ws", files: { "notes/a.md": "case a\n", "docs/new.md": "new\n" } },
      source,
    );
    expect(made).toEqual({ dir: join(h, "eval-workspaces", "case1-arm-ws"), created: true });
    expect(tree(made.dir)).toEqual({
      "README.md": "employee readme\n",
      "notes/a.md": "case a\n",
      "docs/new.md": "new\n",
      "state/working_state/task_1.md": "state\n",
    });
    expect(existsSync(join(made.dir, MARKER))).toBe(true);
    // The employee's own workspace is untouched, and no staging dir is left beside the workspace.
    expect(tree(source)).toEqual({
      "README.md": "employee readme\n",
      "notes/a.md": "employee a\n",
      "state/working_state/task_1.md": "state\n",
    });
    expect(readdirSync(isolatedWorkspacesRoot(h))).toEqual(["case1-arm-ws"]);
  });

  it("starts empty (but for the files) when the employee has no workspace", async () => {
    const h = home();
    const made = await ensureIsolatedWorkspace(h, { key: "k1", files: { "a.md": "A" } }, join(h, "agents", "nobody"));
    expect(tree(made.dir)).toEqual({ "a.md": "A" });
    const empty = await ensureIsolatedWorkspace(h, { key: "k2" }, join(h, "agents", "nobody"));
    expect(tree(empty.dir)).toEqual({});
  });

  it("is made once: a later call uses it as it is, never re-copying or re-writing the files", async () => {
    const h = home();
    const source = employee(h);
    const spec = { key: "arm", files: { "notes/a.md": "case a\n" } };
    const first = await ensureIsolatedWorkspace(h, spec, source);
    // The planner and the executor worked in it; the employee's workspace changed meanwhile.
    writeFileSync(join(first.dir, "notes", "a.md"), "executor's a\n");
    writeFileSync(join(first.dir, "plan.md"), "plan\n");
    writeFileSync(join(source, "README.md"), "changed later\n");
    const again = await ensureIsolatedWorkspace(h, spec, source);
    expect(again).toEqual({ dir: first.dir, created: false });
    expect(tree(again.dir)).toMatchObject({ "notes/a.md": "executor's a\n", "plan.md": "plan\n", "README.md": "employee readme\n" });
    expect(await findIsolatedWorkspace(h, "arm")).toBe(first.dir);
    expect(await findIsolatedWorkspace(h, "other")).toBeUndefined();
  });

  it("gives racing creators (an executor fan-out) one consistent dir: one creates it, the others use it", async () => {
    const h = home();
    const source = employee(h);
    for (let i = 0; i < 50; i += 1) writeFileSync(join(source, `bulk-${i}.txt`), `bulk ${i}\n`.repeat(200));
    const spec = { key: "race", files: { "notes/a.md": "case a\n" } };
    const all = await Promise.all(Array.from({ length: 6 }, () => ensureIsolatedWorkspace(h, spec, source)));
    expect(all.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(all.map((r) => r.dir))).toEqual(new Set([isolatedWorkspaceDir(h, "race")]));
    const files = tree(isolatedWorkspaceDir(h, "race"));
    expect(Object.keys(files)).toHaveLength(53);
    expect(files["notes/a.md"]).toBe("case a\n");
    expect(files["bulk-49.txt"]).toBe("bulk 49\n".repeat(200));
    // Every loser discarded its staging.
    expect(readdirSync(isolatedWorkspacesRoot(h))).toEqual(["race"]);
  });

  it("refuses a file path that escapes, and a file where a directory is needed, leaving nothing behind", async () => {
    const h = home();
    const source = employee(h);
    await expect(ensureIsolatedWorkspace(h, { key: "bad", files: { "../../escape.md": "x" } }, source)).rejects.toThrow(/'\.\.'/);
    await expect(ensureIsolatedWorkspace(h, { key: "bad", files: { "/etc/x": "x" } }, source)).rejects.toThrow(/absolute/);
    await expect(ensureIsolatedWorkspace(h, { key: "bad", files: { "README.md/x": "x" } }, source)).rejects.toThrow();
    expect(existsSync(join(h, "escape.md"))).toBe(false);
    expect(existsSync(isolatedWorkspaceDir(h, "bad"))).toBe(false);
    expect(existsSync(isolatedWorkspacesRoot(h)) ? readdirSync(isolatedWorkspacesRoot(h)) : []).toEqual([]);
    await expect(ensureIsolatedWorkspace(h, { key: "../x" }, source)).rejects.toThrow(/invalid isolated workspace key/);
  });

  it("copies regular files and directories only: a symlink in the employee workspace is left out", async () => {
    const h = home();
    const source = employee(h);
    const outside = join(h, "secret.txt");
    writeFileSync(outside, "secret\n");
    symlinkSync(outside, join(source, "link-out"));
    symlinkSync("notes", join(source, "link-dir"));
    const made = await ensureIsolatedWorkspace(h, { key: "links" }, source);
    expect(existsSync(join(made.dir, "link-out"))).toBe(false);
    expect(existsSync(join(made.dir, "link-dir"))).toBe(false);
    expect(tree(made.dir)).toHaveProperty("notes/a.md", "employee a\n");
  });
});

describe("sweepIsolatedWorkspaces", () => {
  it("removes workspaces unused for 7 days and old staging leftovers, never one a job is using", async () => {
    const h = home();
    const fresh = (await ensureIsolatedWorkspace(h, { key: "fresh" }, join(h, "none"))).dir;
    const old = (await ensureIsolatedWorkspace(h, { key: "old" }, join(h, "none"))).dir;
    const busy = (await ensureIsolatedWorkspace(h, { key: "busy" }, join(h, "none"))).dir;
    const staleStaging = join(isolatedWorkspacesRoot(h), ".staging-old-abc");
    const liveStaging = join(isolatedWorkspacesRoot(h), ".staging-new-def");
    mkdirSync(staleStaging);
    mkdirSync(liveStaging);
    const now = Date.now();
    const longAgo = new Date(now - ISOLATED_WORKSPACE_KEEP_MS - 60_000);
    for (const dir of [old, busy]) utimesSync(join(dir, MARKER), longAgo, longAgo);
    utimesSync(staleStaging, longAgo, longAgo);
    const release = useIsolatedWorkspace(h, "busy");
    expect((await sweepIsolatedWorkspaces(h, { nowMs: now })).sort()).toEqual([".staging-old-abc", "old"]);
    expect([existsSync(fresh), existsSync(old), existsSync(busy), existsSync(liveStaging)]).toEqual([true, false, true, true]);
    release();
    release(); // once only
    expect(await sweepIsolatedWorkspaces(h, { nowMs: now })).toEqual(["busy"]);
  });

  it("counts the age from the last use: finding the workspace again touches it", async () => {
    const h = home();
    const dir = (await ensureIsolatedWorkspace(h, { key: "k" }, join(h, "none"))).dir;
    const longAgo = new Date(Date.now() - ISOLATED_WORKSPACE_KEEP_MS - 60_000);
    utimesSync(join(dir, MARKER), longAgo, longAgo);
    await findIsolatedWorkspace(h, "k");
    expect(Date.now() - statSync(join(dir, MARKER)).mtimeMs).toBeLessThan(60_000);
    expect(await sweepIsolatedWorkspaces(h, { nowMs: Date.now() })).toEqual([]);
  });

  it("runs with the work janitor's sweep, on the janitor's clock", async () => {
    const h = home();
    const old = (await ensureIsolatedWorkspace(h, { key: "old" }, join(h, "none"))).dir;
    const busy = (await ensureIsolatedWorkspace(h, { key: "busy" }, join(h, "none"))).dir;
    const release = useIsolatedWorkspace(h, "busy");
    const logger = createMemoryLogger();
    const later = Date.now() + ISOLATED_WORKSPACE_KEEP_MS + 60_000;
    const janitor = createWorkJanitor({ home: h, logger, now: () => later, runningJobIds: () => [], sweepIntervalMs: 60_000 });
    janitor.settings({ keep_failed_work_hours: 24 });
    await janitor.stop();
    release();
    expect([existsSync(old), existsSync(busy)]).toEqual([false, true]);
    expect(logger.records).toContainEqual(expect.objectContaining({ event: "eval_workspace.swept", dir: old }));
  });

  it("has nothing to do without the root", async () => {
    expect(await sweepIsolatedWorkspaces(home(), { nowMs: Date.now() })).toEqual([]);
  });
});

describe("the workspace block a verifier reads", () => {
  it("shows each observe path in order, then receipts: exists or missing", async () => {
    const h = home();
    const dir = (await ensureIsolatedWorkspace(h, { key: "k", files: { "notes/a.md": "alpha\n", "b.md": "no newline" } }, join(h, "x")))
      .dir;
    const paths = ["b.md", "notes/missing.md", "notes/a.md"];
    const observed = await observeFiles(dir, paths);
    expect(workspaceBlock(paths, observed)).toBe(
      [
        "",
        "",
        "## Files in the workspace",
        "--- b.md",
        "no newline",
        "--- notes/missing.md",
        "(absent)",
        "--- notes/a.md",
        "alpha",
        "",
        "<artifact_receipts>",
        "b.md exists",
        "notes/missing.md missing",
        "notes/a.md exists",
        "</artifact_receipts>",
        "",
      ].join("\n"),
    );
  });

  it("never follows a link out of the workspace, and says what was cut", async () => {
    const h = home();
    const dir = (await ensureIsolatedWorkspace(h, { key: "k" }, join(h, "x"))).dir;
    writeFileSync(join(h, "secret.txt"), "secret\n");
    symlinkSync(join(h, "secret.txt"), join(dir, "leak.md"));
    writeFileSync(join(dir, "big.md"), "x".repeat(70 * 1024));
    const paths = ["leak.md", "big.md"];
    const observed = levelObserved(await observeFiles(dir, paths));
    expect(observed.files["leak.md"]).toBeNull();
    expect(observed.files["big.md"]).toHaveLength(64 * 1024);
    const block = workspaceBlock(paths, observed);
    expect(block).not.toContain("secret");
    expect(block).toContain("--- leak.md\n(not read: not a regular file, or a link out of the workspace)\n");
    expect(block).toContain("--- big.md (truncated: only the beginning of the file is shown)\n");
    expect(block).toContain("<artifact_receipts>\nleak.md missing\nbig.md exists\n</artifact_receipts>");
  });

  it("levels the contents to the budget: short files stay whole, long ones keep their beginning", () => {
    const files: Record<string, string | null> = { "short.md": "short\n", "gone.md": null };
    for (let i = 0; i < 10; i += 1) files[`long-${i}.md`] = `${i}`.repeat(64 * 1024);
    const levelled = levelObserved({ files, truncated: [], unreadable: [] });
    expect(Buffer.byteLength(JSON.stringify(levelled.files))).toBeLessThanOrEqual(WORKSPACE_FILES_BYTES);
    expect(levelled.files["short.md"]).toBe("short\n");
    expect(levelled.files["gone.md"]).toBeNull();
    expect(levelled.files["long-3.md"]!.length).toBeGreaterThan(20_000);
    expect(levelled.files["long-3.md"]).toBe("3".repeat(levelled.files["long-3.md"]!.length));
    expect(levelled.truncated).toEqual(Array.from({ length: 10 }, (_, i) => `long-${i}.md`));
  });

  it("keeps an empty receipts block readable as one", () => {
    expect(workspaceBlock([], { files: {}, truncated: [], unreadable: [] })).toContain(
      "<artifact_receipts>\n(no observe paths)\n</artifact_receipts>",
    );
  });
});
