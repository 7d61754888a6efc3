/**
 * stdinText: the prompt is written to the child's stdin, which is then closed, so CLIs that read
 * their prompt from stdin (claude -p, codex exec -) get it and none of them blocks on an open pipe.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runProcess } from "../../local-runner/src/process-runner.ts";
import { tempDir } from "./helpers/paths.ts";

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function dir(): string {
  const { dir: d, cleanup } = tempDir("crewplane-process-");
  cleanups.push(cleanup);
  return d;
}

const script = (code: string): string[] => ["-e", code];

describe("runProcess stdin", () => {
  it("writes stdinText and closes stdin, so a reader sees EOF", async () => {
    const cwd = dir();
    const lines: string[] = [];
    const text = "a prompt\nwith two lines, ünïcode and a 🚀";
    const outcome = await runProcess({
      command: process.execPath,
      args: script("let s='';process.stdin.on('data',c=>s+=c).on('end',()=>console.log(JSON.stringify(s)))"),
      cwd,
      timeoutMs: 10_000,
      stdoutPath: join(cwd, "out"),
      stderrPath: join(cwd, "err"),
      onStdoutLine: (l) => lines.push(l),
      stdinText: text,
    });
    expect(outcome).toMatchObject({ termination: "exited", exitCode: 0 });
    expect(JSON.parse(lines[0]!)).toBe(text);
  });

  it("gives /dev/null (EOF at once) without stdinText", async () => {
    const cwd = dir();
    const outcome = await runProcess({
      command: process.execPath,
      args: script("let n=0;process.stdin.on('data',c=>n+=c.length).on('end',()=>console.log('eof',n))"),
      cwd,
      timeoutMs: 10_000,
      stdoutPath: join(cwd, "out"),
      stderrPath: join(cwd, "err"),
    });
    expect(outcome.exitCode).toBe(0);
    expect(readFileSync(join(cwd, "out"), "utf8").trim()).toBe("eof 0");
  });

  it("survives a child that exits without reading a large stdinText", async () => {
    const cwd = dir();
    const outcome = await runProcess({
      command: process.execPath,
      args: script("process.exit(3)"),
      cwd,
      timeoutMs: 10_000,
      stdoutPath: join(cwd, "out"),
      stderrPath: join(cwd, "err"),
      stdinText: "x".repeat(4 * 1024 * 1024),
    });
    expect(outcome).toMatchObject({ termination: "exited", exitCode: 3 });
  });
});
