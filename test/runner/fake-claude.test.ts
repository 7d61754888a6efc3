/**
 * The fake `claude` must fail the same way the real one does on argv mistakes, or tests that pass
 * against the fake would prove nothing about the real CLI.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fakeClaude, realClaude, tempDir } from "./helpers/paths.ts";

function run(bin: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  const { dir, cleanup } = tempDir("crewplane-fake-claude-");
  try {
    const out = spawnSync(bin, args, {
      cwd: dir,
      env: { PATH: process.env.PATH, HOME: dir, ...env },
      stdio: ["ignore", "pipe", "pipe"],
      encoding: "utf8",
      timeout: 60_000,
    });
    return { status: out.status, stdout: out.stdout, stderr: out.stderr.trim() };
  } finally {
    cleanup();
  }
}

describe("fake claude", () => {
  it.each([
    ["an unknown flag", ["-p", "--bogus-flag", "hi"]],
    ["stream-json without --verbose", ["-p", "--output-format", "stream-json", "hi"]],
    ["an invalid --permission-mode", ["-p", "--permission-mode", "bogus", "hi"]],
    ["an invalid --output-format", ["-p", "--output-format", "xml", "hi"]],
    ["--model without a value", ["-p", "--model"]],
  ])(
    "rejects %s with the real CLI message and exit code",
    (_label, args) => {
      const fake = run(fakeClaude, args);
      expect(fake.status).toBe(1);
      if (existsSync(realClaude)) {
        const real = run(realClaude, args);
        expect({ status: fake.status, stderr: fake.stderr }).toEqual({ status: real.status, stderr: real.stderr });
      }
    },
    60_000,
  );

  it("prints only the result object with --output-format json", () => {
    const out = run(fakeClaude, ["-p", "--output-format", "json", "hello"]);
    const lines = out.stdout.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ type: "result", is_error: false, result: "FAKE_OK: hello" });
  });

  it("logs argv, cwd and a closed stdin to FAKE_ARGV_LOG", () => {
    const { dir, cleanup } = tempDir();
    try {
      const log = join(dir, "argv.jsonl");
      run(fakeClaude, ["-p", "--output-format", "stream-json", "--verbose", "--", "-x"], { FAKE_ARGV_LOG: log });
      const entry = JSON.parse(readFileSync(log, "utf8").trim());
      expect(entry).toMatchObject({
        cli: "claude",
        argv: ["-p", "--output-format", "stream-json", "--verbose", "--", "-x"],
        stdinClosed: true,
      });
      expect(typeof entry.cwd).toBe("string");
    } finally {
      cleanup();
    }
  });

  it("reads the prompt from stdin when none is given", () => {
    const out = spawnSync(fakeClaude, ["-p"], { input: "piped prompt", encoding: "utf8" });
    expect(out.stdout.trim()).toBe("FAKE_OK: piped prompt");
  });
});
