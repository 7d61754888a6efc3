/**
 * Artifact receipts for every state, on a real filesystem (symlinks, a FIFO, a sparse 64 MiB + 1 file).
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { checkArtifacts, RECEIPT_MAX_BYTES, renderReceipt } from "../../../local-runner/src/members/receipts.ts";
import { tempDir } from "../helpers/paths.ts";

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function workspace() {
  const { dir, cleanup } = tempDir("crewplane-receipts-");
  cleanups.push(cleanup);
  const ws = join(dir, "agents", "emp_1");
  const outside = join(dir, "elsewhere");
  mkdirSync(join(ws, "notes"), { recursive: true });
  mkdirSync(outside, { recursive: true });
  return { ws, outside };
}

const sha = (text: string): string => createHash("sha256").update(text).digest("hex");

describe("checkArtifacts", () => {
  it("hashes a declared file inside the workspace and fills in the undeclared hash", async () => {
    const { ws } = workspace();
    writeFileSync(join(ws, "notes/a.md"), "alpha\n");
    const check = await checkArtifacts(ws, [{ path: "notes/a.md" }]);
    expect(check.receipts).toEqual([{ path: "notes/a.md", state: "exists", bytes: 6, sha256: sha("alpha\n"), filled: true }]);
    expect(check.artifacts).toEqual([{ path: "notes/a.md", sha256: sha("alpha\n") }]);
    expect(check.audits).toEqual([]);
    expect(renderReceipt(check.receipts[0]!)).toBe(`notes/a.md 6B sha256=${sha("alpha\n").slice(0, 12)}… exists`);
  });

  it("confirms a matching declared hash and size without changing the declaration", async () => {
    const { ws } = workspace();
    writeFileSync(join(ws, "notes/a.md"), "alpha\n");
    const check = await checkArtifacts(ws, [{ path: "./notes/a.md", sha256: sha("alpha\n").toUpperCase(), bytes: 6 }]);
    expect(check.receipts[0]).toMatchObject({ state: "exists", filled: false });
    expect(check.artifacts[0]).toEqual({ path: "./notes/a.md", sha256: sha("alpha\n").toUpperCase(), bytes: 6 });
  });

  it("reports a declared file that is not there as missing", async () => {
    const { ws } = workspace();
    const check = await checkArtifacts(ws, [{ path: "notes/b.md", sha256: sha("x") }]);
    expect(check.receipts).toEqual([{ path: "notes/b.md", state: "missing" }]);
    expect(renderReceipt(check.receipts[0]!)).toBe("notes/b.md missing");
    expect(check.audits).toEqual([]);
  });

  it("keeps a wrong declared hash, flags the mismatch and audits it", async () => {
    const { ws } = workspace();
    writeFileSync(join(ws, "notes/c.md"), "the real bytes");
    const declared = sha("what the executor claimed");
    const check = await checkArtifacts(ws, [{ path: "notes/c.md", sha256: declared }]);
    expect(check.receipts[0]).toEqual({
      path: "notes/c.md",
      state: "mismatch",
      bytes: 14,
      sha256: sha("the real bytes"),
      declared_sha256: declared,
    });
    expect(check.artifacts[0]).toEqual({ path: "notes/c.md", sha256: declared });
    expect(check.audits).toEqual([
      { type: "team_packet_artifact_mismatch", path: "notes/c.md", detail: `declared ${declared.slice(0, 12)}…` },
    ]);
    expect(renderReceipt(check.receipts[0]!)).toMatch(/^notes\/c\.md 14B sha256=\w{12}… mismatch \(declared \w{12}…\)$/);
  });

  it("flags a wrong declared size as a mismatch too", async () => {
    const { ws } = workspace();
    writeFileSync(join(ws, "notes/d.md"), "1234");
    const check = await checkArtifacts(ws, [{ path: "notes/d.md", bytes: 999 }]);
    expect(check.receipts[0]).toMatchObject({ state: "mismatch", bytes: 4, declared_bytes: 999 });
  });

  it.each([
    ["a relative path that climbs out", (outside: string) => "../../elsewhere/secret.txt", "escapes_workspace"],
    ["an absolute path elsewhere", (outside: string) => join(outside, "secret.txt"), "escapes_workspace"],
  ])("refuses %s as outside_workspace with an audit", async (_label, pathOf, reason) => {
    const { ws, outside } = workspace();
    writeFileSync(join(outside, "secret.txt"), "not yours");
    const path = pathOf(outside);
    const check = await checkArtifacts(ws, [{ path }]);
    expect(check.receipts).toEqual([{ path, state: "outside_workspace", reason }]);
    expect(check.audits).toEqual([
      { type: "team_packet_artifact_refused", path, detail: `resolves outside the employee workspace (${reason})` },
    ]);
    expect(renderReceipt(check.receipts[0]!)).toBe(`${path} outside_workspace`);
  });

  it("accepts an absolute path that is inside the workspace", async () => {
    const { ws } = workspace();
    writeFileSync(join(ws, "notes/a.md"), "alpha\n");
    expect((await checkArtifacts(ws, [{ path: join(ws, "notes/a.md") }])).receipts[0]).toMatchObject({ state: "exists" });
  });

  it("detects a symlink inside the workspace that points outside it", async () => {
    const { ws, outside } = workspace();
    writeFileSync(join(outside, "secret.txt"), "not yours");
    symlinkSync(join(outside, "secret.txt"), join(ws, "notes/innocent.md"));
    const check = await checkArtifacts(ws, [{ path: "notes/innocent.md" }]);
    expect(check.receipts).toEqual([{ path: "notes/innocent.md", state: "outside_workspace", reason: "symlink_escape" }]);
    expect(check.audits[0]).toMatchObject({ type: "team_packet_artifact_refused" });
  });

  it("detects an escape through a symlinked directory even when the file does not exist yet", async () => {
    const { ws, outside } = workspace();
    symlinkSync(outside, join(ws, "linkdir"));
    const check = await checkArtifacts(ws, [{ path: "linkdir/new/file.md" }]);
    expect(check.receipts[0]).toEqual({ path: "linkdir/new/file.md", state: "outside_workspace", reason: "symlink_escape" });
  });

  it("detects a dangling symlink that points outside", async () => {
    const { ws, outside } = workspace();
    symlinkSync(join(outside, "not-yet.txt"), join(ws, "notes/dangling.md"));
    expect((await checkArtifacts(ws, [{ path: "notes/dangling.md" }])).receipts[0]).toMatchObject({ state: "outside_workspace" });
  });

  it("follows a symlink that stays inside the workspace", async () => {
    const { ws } = workspace();
    writeFileSync(join(ws, "notes/a.md"), "alpha\n");
    symlinkSync(join(ws, "notes/a.md"), join(ws, "alias.md"));
    expect((await checkArtifacts(ws, [{ path: "alias.md" }])).receipts[0]).toMatchObject({ state: "exists", sha256: sha("alpha\n") });
  });

  it("marks a FIFO unverified without ever blocking on it", async () => {
    const { ws } = workspace();
    execFileSync("mkfifo", [join(ws, "notes/pipe")]);
    const check = await checkArtifacts(ws, [{ path: "notes/pipe" }]);
    expect(check.receipts).toEqual([{ path: "notes/pipe", state: "unverified", reason: "not_regular_file" }]);
    expect(renderReceipt(check.receipts[0]!)).toBe("notes/pipe unverified (not_regular_file)");
  });

  it("marks a directory unverified", async () => {
    const { ws } = workspace();
    expect((await checkArtifacts(ws, [{ path: "notes" }])).receipts[0]).toEqual({
      path: "notes",
      state: "unverified",
      reason: "not_regular_file",
    });
  });

  it("marks a file of 64 MiB + 1 byte unverified without hashing it, and hashes one of exactly 64 MiB", async () => {
    const { ws } = workspace();
    writeFileSync(join(ws, "big.bin"), "");
    truncateSync(join(ws, "big.bin"), RECEIPT_MAX_BYTES + 1);
    writeFileSync(join(ws, "edge.bin"), "");
    truncateSync(join(ws, "edge.bin"), RECEIPT_MAX_BYTES);
    const check = await checkArtifacts(ws, [{ path: "big.bin" }, { path: "edge.bin" }]);
    expect(check.receipts[0]).toEqual({ path: "big.bin", state: "unverified", reason: "too_large", bytes: RECEIPT_MAX_BYTES + 1 });
    expect(check.receipts[1]).toMatchObject({ path: "edge.bin", state: "exists", bytes: RECEIPT_MAX_BYTES });
    expect(renderReceipt(check.receipts[0]!)).toBe(`big.bin unverified (too_large, ${RECEIPT_MAX_BYTES + 1}B)`);
  });

  it("marks an empty path or one with a NUL byte unverified", async () => {
    const { ws } = workspace();
    const check = await checkArtifacts(ws, [{ path: "" }, { path: "a\0b" }]);
    expect(check.receipts.map((r) => r.state)).toEqual(["unverified", "unverified"]);
  });

  it("checks each declaration once, in order, mixing states", async () => {
    const { ws } = workspace();
    writeFileSync(join(ws, "notes/a.md"), "alpha\n");
    const check = await checkArtifacts(ws, [{ path: "notes/a.md" }, { path: "notes/gone.md" }, { path: "../x" }]);
    expect(check.receipts.map((r) => r.state)).toEqual(["exists", "missing", "outside_workspace"]);
    expect(check.audits.map((a) => a.type)).toEqual(["team_packet_artifact_refused"]);
  });
});
