/**
 * The fake codex, gemini, agy and grok must fail the way the real ones do (same text, same exit
 * code) wherever a real binary is installed to compare with, or tests passing against the fakes
 * would prove nothing about the real CLIs.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { fakeAgy, fakeCodex, fakeGemini, fakeGrok, realCodex, realGemini, tempDir } from "./helpers/paths.ts";
import { isAlive, waitFor } from "./helpers/processes.ts";

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function scratch(): string {
  const { dir, cleanup } = tempDir("crewplane-fakes-");
  cleanups.push(cleanup);
  return dir;
}

/** No credentials, an empty HOME, stdin closed. */
function run(bin: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string } = {}) {
  const dir = options.cwd ?? scratch();
  const home = join(dir, ".home");
  mkdirSync(home, { recursive: true });
  const out = spawnSync(bin, args, {
    cwd: dir,
    env: { PATH: process.env.PATH, HOME: home, CODEX_HOME: home, ...options.env },
    stdio: [options.input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    ...(options.input !== undefined ? { input: options.input } : {}),
    encoding: "utf8",
    timeout: 60_000,
  });
  return { status: out.status, stdout: out.stdout, stderr: out.stderr };
}

/** The real codex prints a PATH-alias warning under a temp CODEX_HOME; it is not part of the error. */
const withoutWarnings = (text: string): string =>
  text
    .split("\n")
    .filter((l) => !l.startsWith("WARNING:"))
    .join("\n")
    .trim();

describe("fake codex", () => {
  it.each([
    ["an unknown flag", ["exec", "--bogus", "x"]],
    ["-a, which exec does not have", ["exec", "-a", "never", "x"]],
    ["the removed --full-auto", ["exec", "--full-auto", "x"]],
    ["an invalid --sandbox", ["exec", "-s", "bogus", "x"]],
    ["--model without a value", ["exec", "--json", "-m"]],
    ["two prompts", ["exec", "--json", "x", "y"]],
    ["outside a git repo without --skip-git-repo-check", ["exec", "--json", "x"]],
    [
      "an unquoted integer in an MCP env table (the port bug)",
      ["exec", "--json", "--skip-git-repo-check", "-c", 'mcp_servers.x.command="node"', "-c", "mcp_servers.x.env.PORT=18999", "x"],
    ],
    [
      "an unknown tool approval variant",
      [
        "exec",
        "--json",
        "--skip-git-repo-check",
        "-c",
        'mcp_servers.x.command="node"',
        "-c",
        'mcp_servers.x.default_tools_approval_mode="bogus"',
        "x",
      ],
    ],
    ["a missing --output-schema file", ["exec", "--json", "--skip-git-repo-check", "--output-schema", "/nonexistent/schema.json", "x"]],
  ])(
    "rejects %s with the real CLI's message and exit code",
    (_label, args) => {
      const fake = run(fakeCodex, args);
      expect(fake.status).not.toBe(0);
      expect(fake.stdout).toBe("");
      if (existsSync(realCodex)) {
        const real = run(realCodex, args);
        expect({ status: fake.status, stderr: withoutWarnings(fake.stderr) }).toEqual({
          status: real.status,
          stderr: withoutWarnings(real.stderr),
        });
      }
    },
    60_000,
  );

  it("blocks on an open stdin after a positional prompt, like the real one, until stdin closes", async () => {
    const dir = scratch();
    const child = spawn(fakeCodex, ["exec", "--json", "--skip-git-repo-check", "say hi"], { cwd: dir, stdio: ["pipe", "pipe", "pipe"] });
    let stderr = "";
    let stdout = "";
    child.stderr.on("data", (c) => (stderr += c));
    child.stdout.on("data", (c) => (stdout += c));
    const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
    await waitFor(() => stderr.includes("Reading additional input from stdin..."), "the stdin notice");
    // Still waiting, no JSONL yet: a runner that forgets to close stdin hangs here forever.
    await new Promise((r) => setTimeout(r, 300));
    expect(isAlive(child.pid!)).toBe(true);
    expect(stdout).toBe("");
    child.stdin.end("more context");
    expect(await exited).toBe(0);
    expect(stdout).toContain('"type":"turn.completed"');
  });

  it("reads the prompt from stdin with '-' and answers in the real JSONL shape", () => {
    const out = run(fakeCodex, ["exec", "--json", "--skip-git-repo-check", "-"], { input: "summarise" });
    expect(out.status).toBe(0);
    expect(
      out.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l).type),
    ).toEqual(["thread.started", "turn.started", "item.completed", "item.completed", "turn.completed"]);
    expect(out.stdout).toContain('"text":"FAKE_OK: summarise"');
  });

  it("runs inside a git repository without --skip-git-repo-check", () => {
    const dir = scratch();
    mkdirSync(join(dir, ".git"));
    expect(run(fakeCodex, ["exec", "--json", "x"], { cwd: dir }).status).toBe(0);
  });

  it("answers with JSON text when --output-schema is given", () => {
    const dir = scratch();
    writeFileSync(join(dir, "schema.json"), "{}");
    const out = run(fakeCodex, ["exec", "--json", "--skip-git-repo-check", "--output-schema", join(dir, "schema.json"), "x"], { cwd: dir });
    const message = out.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l))
      .find((e) => e.item?.type === "agent_message");
    expect(JSON.parse(message.item.text)).toEqual({ verdict: "PASS", reasons: ["fake"] });
  });
});

describe("fake gemini", () => {
  it.each([
    ["an unknown flag", ["-p", "hi", "--bogus"]],
    ["an invalid --output-format", ["-p", "hi", "-o", "xml"]],
    ["--model without a value", ["-p", "hi", "--model"]],
  ])(
    "rejects %s with the real CLI's message, help text and exit code",
    (_label, args) => {
      const fake = run(fakeGemini, args);
      expect(fake.status).toBe(1);
      if (existsSync(realGemini)) {
        const real = run(realGemini, args);
        expect({ status: fake.status, stderr: fake.stderr }).toEqual({ status: real.status, stderr: real.stderr });
      }
    },
    60_000,
  );

  it("rejects an invalid --approval-mode and a missing -p value like yargs does", () => {
    expect(run(fakeGemini, ["-p", "hi", "--approval-mode", "bad"]).stderr.split("\n").slice(0, 2)).toEqual([
      "Invalid values:",
      '  Argument: approval-mode, Given: "bad", Choices: "default", "auto_edit", "yolo", "plan"',
    ]);
    expect(run(fakeGemini, ["-p"]).stderr.split("\n")[0]).toBe("Not enough arguments following: p");
  });

  it("exits 41 with the real auth message on stderr and nothing on stdout, like the real one without credentials", () => {
    const fake = run(fakeGemini, ["-p", "", "-o", "stream-json", "--skip-trust"], { input: "hi", env: { FAKE_SCENARIO: "auth" } });
    expect(fake).toMatchObject({ status: 41, stdout: "" });
    if (existsSync(realGemini)) {
      const real = run(realGemini, ["-p", "", "-o", "stream-json", "--skip-trust"], { input: "hi" });
      expect(real.status).toBe(41);
      expect(fake.stderr.replace(/\/[^ ]*\.gemini/, "<home>/.gemini")).toBe(real.stderr.replace(/\/[^ ]*\.gemini/, "<home>/.gemini"));
    }
  }, 60_000);

  it("takes the prompt from stdin with -p '' and downgrades yolo without --skip-trust", () => {
    const trusted = run(fakeGemini, ["-p", "", "-o", "stream-json", "--skip-trust", "--approval-mode", "yolo"], { input: "plan it" });
    expect(trusted.stderr).not.toContain("overridden");
    expect(trusted.stdout).toContain('"content":"plan it"');
    const untrusted = run(fakeGemini, ["-p", "", "-o", "stream-json", "--approval-mode", "yolo"], { input: "plan it" });
    expect(untrusted.stderr).toContain('Approval mode overridden to "default" because the current folder is not trusted.');
  });
});

describe("fake agy and grok", () => {
  it("agy accepts --effort and rejects an unknown flag yargs-style", () => {
    expect(run(fakeAgy, ["-p", "", "--output-format", "stream-json", "--effort", "max"], { input: "x" }).status).toBe(0);
    const bad = run(fakeAgy, ["-p", "x", "--bogus"]);
    expect(bad.status).toBe(1);
    expect(bad.stderr.split("\n")[0]).toBe("Unknown argument: bogus");
  });

  it("grok refuses -p together with --prompt-file, clap-style, and never reads stdin", () => {
    const dir = scratch();
    writeFileSync(join(dir, "p.md"), "from the file");
    const both = run(fakeGrok, ["-p", "x", "--prompt-file", join(dir, "p.md")]);
    expect(both.status).toBe(2);
    expect(both.stderr).toContain("error: the argument '--single <PROMPT>' cannot be used with '--prompt-file <PATH>'");
    const out = run(fakeGrok, ["--prompt-file", join(dir, "p.md"), "--output-format", "streaming-json"], { input: "ignored stdin" });
    expect(out.stdout).toContain('"data":"FAKE_OK: from the file"');
  });

  it("grok rejects an unknown flag and an invalid effort with exit 2", () => {
    expect(run(fakeGrok, ["--bogus"]).status).toBe(2);
    const effort = run(fakeGrok, ["-p", "x", "--reasoning-effort", "extreme"]);
    expect(effort.status).toBe(2);
    expect(effort.stderr).toContain("[possible values: none, minimal, low, medium, high, xhigh, max]");
  });
});

describe("fake scenarios print the reference output formats", () => {
  it.each([
    [fakeCodex, ["exec", "--json", "--skip-git-repo-check", "-"], "turn.failed", 1],
    [fakeGemini, ["-p", "", "-o", "stream-json", "--skip-trust"], "result", 1],
    [fakeGrok, ["-p", "x", "--output-format", "streaming-json"], "error", 1],
  ])("%s fail scenario ends with its failure event and exit code", (bin, args, lastType, code) => {
    const out = run(bin, args, { input: "x", env: { FAKE_SCENARIO: "fail" } });
    expect(out.status).toBe(code);
    expect(JSON.parse(out.stdout.trim().split("\n").at(-1)!).type).toBe(lastType);
  });

  it.each([fakeCodex, fakeGemini, fakeGrok])("%s crash scenario dies from a signal mid-stream", (bin) => {
    const args =
      bin === fakeCodex
        ? ["exec", "--json", "--skip-git-repo-check", "-"]
        : bin === fakeGemini
          ? ["-p", "", "-o", "stream-json"]
          : ["-p", "x", "--output-format", "streaming-json"];
    const out = spawnSync(bin, args, { input: "x", env: { ...process.env, FAKE_SCENARIO: "crash" }, encoding: "utf8", cwd: scratch() });
    expect(out.signal).toBe("SIGKILL");
    expect(out.stdout.length).toBeGreaterThan(0);
  });

  it("logs argv, stdin bytes and the prompt to FAKE_ARGV_LOG", () => {
    const dir = scratch();
    const log = join(dir, "argv.jsonl");
    run(fakeCodex, ["exec", "--json", "--skip-git-repo-check", "-"], { input: "abc", env: { FAKE_ARGV_LOG: log } });
    expect(JSON.parse(readFileSync(log, "utf8").trim())).toMatchObject({ cli: "codex", stdinBytes: 3, prompt: "abc" });
  });
});
