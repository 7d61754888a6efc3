/**
 * The eval dir's pieces on a real file system: seed paths that may not be written, observe paths
 * read back without following a link out, the 64 KiB cut, ownership across attempts, the sweep.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  OBSERVE_FILE_BYTES,
  createEvalDir,
  evalDirFor,
  evalRootFor,
  observeFiles,
  seedEvalDir,
  seedPathProblem,
  sweepEvalDirs,
  utf8Prefix,
} from "../../../local-runner/src/eval/workspace.ts";
import { createMemoryLogger } from "../../../local-runner/src/logger.ts";
import { createWorkJanitor } from "../../../local-runner/src/work-janitor.ts";
import { tempDir } from "../helpers/paths.ts";

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function home(): string {
  const { dir, cleanup } = tempDir("crewplane-evaldir-");
  cleanups.push(cleanup);
  return dir;
}

describe("seedPathProblem", () => {
  it.each(["a.md", "docs/a.md", "./a.md", "docs/../a.md", "..a", ".hidden/x", "a b/c"])("accepts %s", (path) => {
    expect(seedPathProblem(path)).toBeUndefined();
  });

  it.each([
    ["", "is empty"],
    ["a\0b", "contains a NUL byte"],
    ["/etc/passwd", "is absolute"],
    ["docs/", "names a directory"],
    [".", "escapes the eval directory"],
    ["..", "escapes the eval directory"],
    ["../x", "escapes the eval directory"],
    ["a/../../x", "escapes the eval directory"],
  ])("refuses %j: it %s", (path, problem) => {
    expect(seedPathProblem(path)).toBe(problem);
  });
});

describe("an eval dir", () => {
  it("is created fresh and owner-only, seeded files 0600, and replaces what an earlier attempt left", async () => {
    const h = home();
    mkdirSync(join(evalDirFor(h, "job-1"), "stale"), { recursive: true });
    const dir = await createEvalDir(h, "job-1");
    await seedEvalDir(dir.path, { "docs/a.md": "alpha\n" });
    expect(readdirSync(dir.path)).toEqual(["docs"]);
    expect(statSync(dir.path).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir.path, "docs/a.md")).mode & 0o777).toBe(0o600);
    await dir.remove();
    expect(existsSync(dir.path)).toBe(false);
  });

  it("keeps a job id from climbing out of <home>/eval", () => {
    expect(evalDirFor("/h", "../../etc")).toBe("/h/eval/.._.._etc");
    expect(evalDirFor("/h", "..")).toBe("/h/eval/__");
  });

  it("is left alone by an earlier attempt's remove once a later attempt of the same job owns it", async () => {
    const h = home();
    const first = await createEvalDir(h, "job-1");
    const second = await createEvalDir(h, "job-1");
    await seedEvalDir(second.path, { "a.md": "second attempt" });
    await first.remove();
    expect(existsSync(join(second.path, "a.md"))).toBe(true);
    await second.remove();
    expect(existsSync(second.path)).toBe(false);
  });
});

describe("observeFiles", () => {
  it("reads regular files as UTF-8, null for absent ones (a missing parent, a file as parent), each path once", async () => {
    const h = home();
    const dir = await createEvalDir(h, "job-1");
    await seedEvalDir(dir.path, { "a.md": "héllo\n", "sub/b.txt": "b", "./c.md": "" });
    expect(await observeFiles(dir.path, ["a.md", "sub/b.txt", "c.md", "nope.md", "nodir/x", "a.md/x", "a.md", "sub/../a.md"])).toEqual({
      files: {
        "a.md": "héllo\n",
        "sub/b.txt": "b",
        "c.md": "",
        "nope.md": null,
        "nodir/x": null,
        "a.md/x": null,
        "sub/../a.md": "héllo\n",
      },
      truncated: [],
      unreadable: [],
    });
  });

  it("reports links, directories, FIFOs and paths out of the dir as null and unreadable, never reading them", async () => {
    const h = home();
    writeFileSync(join(h, "secret.txt"), "outside");
    mkdirSync(join(h, "outdir"));
    writeFileSync(join(h, "outdir", "x.txt"), "outside too");
    const dir = await createEvalDir(h, "job-1");
    await seedEvalDir(dir.path, { "real.md": "inside", "sub/keep.md": "k" });
    symlinkSync(join(h, "secret.txt"), join(dir.path, "link-out"));
    symlinkSync("real.md", join(dir.path, "link-in"));
    symlinkSync(join(h, "outdir"), join(dir.path, "dir-out"));
    symlinkSync("sub", join(dir.path, "dir-in"));
    execFileSync("mkfifo", [join(dir.path, "fifo")]);
    const paths = ["link-out", "link-in", "dir-out/x.txt", "dir-in/keep.md", "sub", "fifo", "../../secret.txt", join(h, "secret.txt")];
    expect(await observeFiles(dir.path, paths)).toEqual({
      files: {
        "link-out": null,
        "link-in": null,
        "dir-out/x.txt": null,
        // A link to a directory inside the dir stays inside: what it leads to is the case's own file.
        "dir-in/keep.md": "k",
        sub: null,
        fifo: null,
        "../../secret.txt": null,
        [join(h, "secret.txt")]: null,
      },
      truncated: [],
      unreadable: ["link-out", "link-in", "dir-out/x.txt", "sub", "fifo", "../../secret.txt", join(h, "secret.txt")],
    });
  });

  it("cuts a file over 64 KiB to its first 64 KiB, never inside a character, and says so", async () => {
    const h = home();
    const dir = await createEvalDir(h, "job-1");
    // 65,535 ASCII bytes, then a 3-byte character that straddles the cut.
    await seedEvalDir(dir.path, { "big.txt": `${"a".repeat(OBSERVE_FILE_BYTES - 1)}€tail`, "exact.txt": "b".repeat(OBSERVE_FILE_BYTES) });
    const seen = await observeFiles(dir.path, ["big.txt", "exact.txt"]);
    expect(seen.files["big.txt"]).toBe("a".repeat(OBSERVE_FILE_BYTES - 1));
    expect(seen.files["exact.txt"]).toHaveLength(OBSERVE_FILE_BYTES);
    expect(seen.truncated).toEqual(["big.txt"]);
  });

  it("keeps a path named __proto__ a plain key", async () => {
    const h = home();
    const dir = await createEvalDir(h, "job-1");
    const seen = await observeFiles(dir.path, ["__proto__"]);
    expect(Object.keys(seen.files)).toEqual(["__proto__"]);
    expect(JSON.stringify(seen.files)).toBe('{"__proto__":null}');
  });
});

describe("utf8Prefix", () => {
  it("backs off to the start of a character the cut would split", () => {
    const bytes = Buffer.from("ab😀c");
    expect(utf8Prefix(bytes, 3)).toBe("ab");
    expect(utf8Prefix(bytes, 6)).toBe("ab😀");
    expect(utf8Prefix(bytes, 100)).toBe("ab😀c");
  });
});

describe("sweepEvalDirs", () => {
  it("removes the dirs of jobs not running and keeps those of running ones", async () => {
    const h = home();
    mkdirSync(join(evalRootFor(h), "job-dead", "sub"), { recursive: true });
    mkdirSync(join(evalRootFor(h), "job-live"), { recursive: true });
    expect(await sweepEvalDirs(h, { isRunning: (name) => name === "job-live" })).toEqual(["job-dead"]);
    expect(readdirSync(evalRootFor(h))).toEqual(["job-live"]);
    expect(await sweepEvalDirs(home(), { isRunning: () => false })).toEqual([]);
  });
});

describe("the work janitor", () => {
  it("sweeps eval dirs a killed runner left, with the work dirs, and never a running job's", async () => {
    const h = home();
    mkdirSync(evalDirFor(h, "job/dead"), { recursive: true });
    mkdirSync(evalDirFor(h, "job/live"), { recursive: true });
    const logger = createMemoryLogger();
    const janitor = createWorkJanitor({ home: h, logger, now: Date.now, runningJobIds: () => ["job/live"], sweepIntervalMs: 60_000 });
    janitor.settings({ keep_failed_work_hours: 24 });
    await janitor.stop();
    expect(readdirSync(evalRootFor(h))).toEqual(["job_live"]);
    expect(logger.records).toContainEqual(expect.objectContaining({ event: "eval.swept", dir: evalDirFor(h, "job/dead") }));
  });
});
