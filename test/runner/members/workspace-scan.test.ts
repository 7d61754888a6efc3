/**
 * The workspace scan and the turn's receipts on a real filesystem: skipped directories, links never
 * followed, the file cap, and receipts for changes and re-check paths.
 */
import { createHash } from "node:crypto";
import { mkdirSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { scanWorkspace, workspaceEvidence } from "../../../local-runner/src/members/workspace-scan.ts";
import { tempDir } from "../helpers/paths.ts";

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function workspace() {
  const { dir, cleanup } = tempDir("crewplane-scan-");
  cleanups.push(cleanup);
  const ws = join(dir, "agents", "emp_1");
  const outside = join(dir, "elsewhere");
  mkdirSync(ws, { recursive: true });
  mkdirSync(outside, { recursive: true });
  return { ws, outside };
}

const write = (root: string, path: string, text: string) => {
  mkdirSync(join(root, path, ".."), { recursive: true });
  writeFileSync(join(root, path), text);
};
const sha = (text: string) => createHash("sha256").update(text).digest("hex");

describe("scanWorkspace", () => {
  it("lists regular files with size and mtime, skipping VCS, dependency and CLI state dirs at any depth", async () => {
    const { ws } = workspace();
    write(ws, "notes/a.md", "alpha\n");
    write(ws, "README.md", "r");
    for (const skipped of [
      ".git/HEAD",
      "node_modules/x/index.js",
      "pkg/node_modules/y.js",
      ".claude/s.json",
      ".codex/c",
      ".agents/m",
      ".grok/g",
      ".gemini/s",
    ]) {
      write(ws, skipped, "skip");
    }
    const snapshot = await scanWorkspace(ws);
    expect(snapshot.partial).toBe(false);
    expect([...snapshot.files.keys()]).toEqual(["README.md", "notes/a.md"]);
    expect(snapshot.files.get("notes/a.md")).toMatchObject({ size: 6 });
  });

  it("never follows a symlink, to a file or to a directory outside the workspace", async () => {
    const { ws, outside } = workspace();
    write(outside, "secret.md", "outside");
    write(ws, "real.md", "in");
    symlinkSync(join(outside, "secret.md"), join(ws, "link.md"));
    symlinkSync(outside, join(ws, "linked-dir"));
    expect([...(await scanWorkspace(ws)).files.keys()]).toEqual(["real.md"]);
  });

  it("stops at its file cap and says partial, having seen the first files in scan order", async () => {
    const { ws } = workspace();
    for (const name of ["c.md", "a.md", "b/x.md", "b/y.md"]) write(ws, name, name);
    const capped = await scanWorkspace(ws, { maxFiles: 2 });
    expect(capped).toMatchObject({ partial: true });
    expect([...capped.files.keys()]).toEqual(["a.md", "b/x.md"]);
    expect((await scanWorkspace(ws, { maxFiles: 4 })).partial).toBe(false);
  });
});

describe("workspaceEvidence", () => {
  it("hashes created and modified files, marks deleted ones missing, and checks re-check paths first", async () => {
    const { ws } = workspace();
    write(ws, "old/kept.md", "kept");
    write(ws, "old/gone.md", "bye");
    write(ws, "edit.md", "v1");
    utimesSync(join(ws, "edit.md"), new Date(1_000_000), new Date(1_000_000));
    const before = await scanWorkspace(ws);

    write(ws, "new/b.md", "beta beta\n");
    write(ws, "edit.md", "v2 longer");
    rmSync(join(ws, "old/gone.md"));
    const after = await scanWorkspace(ws);

    const evidence = await workspaceEvidence(ws, before, after, ["old/kept.md", "old/never.md", "../escape.md"]);
    expect(evidence.artifact_receipts).toEqual([
      { path: "old/kept.md", state: "exists", bytes: 4, sha256: sha("kept") },
      { path: "old/never.md", state: "missing" },
      { path: "../escape.md", state: "outside_workspace", reason: "escapes_workspace" },
      { path: "edit.md", state: "exists", bytes: 9, sha256: sha("v2 longer") },
      { path: "new/b.md", state: "exists", bytes: 10, sha256: sha("beta beta\n") },
      { path: "old/gone.md", state: "missing" },
    ]);
    expect(evidence.workspace).toEqual({
      scan: "full",
      created: 1,
      modified: 1,
      deleted: 1,
      truncated: false,
      changes: [
        { path: "edit.md", change: "modified" },
        { path: "new/b.md", change: "created" },
        { path: "old/gone.md", change: "deleted" },
      ],
    });
  });

  it("keeps 64 receipts and says truncated when a run changed more files", async () => {
    const { ws } = workspace();
    const before = await scanWorkspace(ws);
    for (let i = 0; i < 70; i += 1) write(ws, `out/f${String(i).padStart(2, "0")}.txt`, `${i}`);
    const evidence = await workspaceEvidence(ws, before, await scanWorkspace(ws), ["first.md"]);
    expect(evidence.artifact_receipts).toHaveLength(64);
    expect(evidence.artifact_receipts[0]).toEqual({ path: "first.md", state: "missing" });
    expect(evidence.artifact_receipts[1]).toMatchObject({ path: "out/f00.txt", state: "exists" });
    expect(evidence.workspace).toMatchObject({ created: 70, truncated: true });
    expect(evidence.workspace.changes).toHaveLength(70);
  });
});
