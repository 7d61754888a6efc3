/**
 * Conformance with the REAL model CLIs (the pinned devDependencies @anthropic-ai/claude-code,
 * @openai/codex, @google/gemini-cli), run with no credentials and no network: every adapter argv a
 * member can get (each role, each effort, with the member's MCP config) must be accepted — no usage
 * error — and the run must come out as an authentication or network failure; codex, which retries
 * the network forever, must be ended by the runner's timeout; and nothing may be left running.
 * agy and grok are not installable here (see the report); their argv is covered by the fakes only.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runEmployeeTurnJob } from "../../local-runner/src/jobs/employee-turn.ts";
import { runUtilityJob } from "../../local-runner/src/jobs/utility.ts";
import { memberCliInput, writeScaffold } from "../../local-runner/src/members/scaffold.ts";
import type { MemberRuntime, Scaffold } from "../../local-runner/src/members/scaffold.ts";
import { runtimeTable } from "../../local-runner/src/runtimes/index.ts";
import { classifyCliRun, runCli } from "../../local-runner/src/runtimes/invoke.ts";
import type { CliEntry, CliVerdict } from "../../local-runner/src/runtimes/invoke.ts";
import type { CliInput, Effort, Role } from "../../local-runner/src/runtimes/types.ts";
import { EFFORTS, ROLES } from "../../local-runner/src/runtimes/types.ts";
import { workDirFor } from "../../local-runner/src/work-dir.ts";
import { startFakeTeamApi } from "./helpers/fake-team-api.ts";
import type { FakeTeamApi } from "./helpers/fake-team-api.ts";
import { realClaude, realCodex, realGemini, tempDir } from "./helpers/paths.ts";
import { expectNothingRunning } from "./helpers/proc-scan.ts";

const MODELS: Record<MemberRuntime, string> = {
  claude: "claude-sonnet-5-5",
  codex: "gpt-5.5",
  antigravity: "gemini-2.5-flash",
  grok: "grok-4",
};
/** What a refused argv looks like on each CLI's stderr. */
const USAGE_ERRORS =
  /unknown option|error: option|argument missing|error: unexpected argument|error: invalid value|a value is required|Error loading config|Unknown argument|Invalid values|Not enough arguments|Usage: /;

let api: FakeTeamApi;
let root: string;
let cleanupRoot: () => void;

beforeAll(async () => {
  api = await startFakeTeamApi();
  ({ dir: root, cleanup: cleanupRoot } = tempDir("crewplane-conformance-"));
});
afterAll(async () => {
  await api.close();
  cleanupRoot();
});

/** Only what a process needs; no ANTHROPIC_/OPENAI_/GEMINI_ keys leak in from the host. */
function credentialFreeEnv(home: string): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, CODEX_HOME: home, LANG: "C.UTF-8", TMPDIR: process.env.TMPDIR ?? "/tmp" };
}

interface Case {
  label: string;
  role: Role;
  /** Every (role, effort) whose argv this case stands for. */
  covers: string[];
  input: CliInput;
  scaffold: Scaffold;
}

/**
 * Every (role, effort) a member of `runtime` can be given, grouped by the argv it produces: pairs
 * with identical argv (gemini has no effort flag; codex clamps max to xhigh; a claude verifier and
 * utility get the same tools) run once, for every pair they stand for.
 */
async function memberCases(runtime: MemberRuntime, home: string): Promise<Case[]> {
  const byArgv = new Map<string, Case>();
  for (const role of ROLES) {
    for (const effort of [undefined, ...EFFORTS]) {
      const scaffold = await writeScaffold({
        home,
        taskId: "task_c",
        round: 1 + EFFORTS.indexOf(effort as Effort) + 1,
        role,
        runtime,
        model: MODELS[runtime],
        ...(effort ? { effort } : {}),
        employee: { id: "emp_c", identity: "Conformance employee." },
        member: { token: api.mint({ employeeId: "emp_c", taskId: "task_c", round: 1, role }), apiUrl: api.url },
      });
      const schema = role === "verifier" ? join(home, "verdict.schema.json") : undefined;
      if (schema)
        (await import("node:fs")).writeFileSync(
          schema,
          JSON.stringify({
            type: "object",
            properties: { verdict: { type: "string", enum: ["PASS", "FAIL"] } },
            required: ["verdict"],
            additionalProperties: false,
          }),
        );
      const input = memberCliInput(scaffold, {
        prompt: `Conformance ${role} ${effort ?? "default"}: reply with the word pong.`,
        ...(schema ? { outputSchemaPath: schema } : {}),
      });
      const entry = runtimeTable({ claude: realClaude, codex: realCodex, gemini: realGemini }).get(runtime) as CliEntry;
      // Scaffold paths differ per (role, round); the argv shape is what we compare.
      const shape = entry.adapter
        .buildArgv(input)
        .map((a) => a.split(scaffold.dir).join("<scaffold>"))
        .join("\u0000");
      const existing = byArgv.get(shape);
      const label = `${role}/${effort ?? "unset"}`;
      if (existing) existing.covers.push(label);
      else byArgv.set(shape, { label, role, covers: [label], input, scaffold });
    }
  }
  return [...byArgv.values()];
}

function expectEveryPairCovered(cases: Case[]): void {
  const all = ROLES.flatMap((role) => ["unset", ...EFFORTS].map((effort) => `${role}/${effort}`));
  expect(cases.flatMap((c) => c.covers).sort()).toEqual(all.sort());
}

/** Runs `cases` a few at a time (each real CLI is a heavy process on a shared 2-core machine). */
async function runAll<T, R>(items: T[], parallel: number, run: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(parallel, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await run(items[i]!);
      }
    }),
  );
  return results;
}

async function runReal(runtime: MemberRuntime, executable: string, c: Case, home: string, timeoutMs: number) {
  const entry = runtimeTable({ [runtime === "antigravity" ? "gemini" : runtime]: executable }).get(runtime) as CliEntry;
  const run = await runCli(entry, c.input, { logDir: c.scaffold.dir, timeoutMs, env: credentialFreeEnv(home), killGraceMs: 2000 });
  const verdict: CliVerdict = classifyCliRun(entry, run, { timeoutMs, model: MODELS[runtime] });
  const stderr = readFileSync(join(c.scaffold.dir, "stderr.log"), "utf8");
  const stream = readFileSync(join(c.scaffold.dir, "stream.jsonl"), "utf8");
  return {
    c,
    run,
    verdict,
    stderr,
    detail: `${c.covers.join(", ")}\nargv: ${run.invocation.args.join(" ")}\nstderr: ${stderr.slice(-1500)}\nstream: ${stream.slice(0, 1500)}`,
  };
}

describe.skipIf(!existsSync(realClaude))("real claude 2.1.332 (not logged in)", () => {
  it("accepts every member argv (role x effort, member MCP config), connects the crewplane MCP server, and reports not_logged_in", async () => {
    const home = join(root, "claude");
    const cases = await memberCases("claude", home);
    expectEveryPairCovered(cases);
    const results = await runAll(cases, 3, (c) => runReal("claude", realClaude, c, home, 90_000));
    for (const r of results) {
      expect(r.stderr, r.detail).not.toMatch(USAGE_ERRORS);
      expect(r.verdict, r.detail).toMatchObject({ kind: "failed", failure: { code: "not_logged_in" } });
      // The real CLI started the member's own MCP server from --mcp-config and reached it.
      expect(r.run.evidence.mcpServers, r.detail).toEqual([{ name: "crewplane", status: "connected" }]);
    }
    await expectNothingRunning(home);
  }, 600_000);
});

describe.skipIf(!existsSync(realCodex))("real codex 0.171.0 (no credentials, no network)", () => {
  it("accepts every member argv and is ended by the runner's timeout as a network failure, leaving nothing running", async () => {
    const home = join(root, "codex");
    const cases = await memberCases("codex", home);
    expectEveryPairCovered(cases);
    const timeoutMs = 10_000;
    const results = await runAll(cases, 6, (c) => runReal("codex", realCodex, c, home, timeoutMs));
    for (const r of results) {
      expect(r.stderr, r.detail).not.toMatch(USAGE_ERRORS);
      expect(r.stderr, r.detail).not.toContain("Reading additional input from stdin");
      // It got as far as starting a thread: argv and every -c override were accepted.
      expect(r.run.stream.sessionId, r.detail).toBeDefined();
      if (r.run.process.termination === "timeout") {
        expect(r.verdict, r.detail).toMatchObject({ kind: "failed", failure: { code: "network_error", retryable: true } });
      } else {
        // With a network but no credentials codex ends the turn itself with a 401.
        expect(r.verdict, r.detail).toMatchObject({ kind: "failed", failure: { code: "not_logged_in" } });
      }
    }
    await expectNothingRunning(home);
  }, 600_000);
});

describe.skipIf(!existsSync(realGemini))("real gemini 0.61.0, the antigravity stand-in (no credentials)", () => {
  it("accepts every member argv and reports the missing auth", async () => {
    const home = join(root, "gemini");
    const cases = await memberCases("antigravity", home);
    expectEveryPairCovered(cases);
    // Effort changes nothing in gemini's argv (no such flag): each case stands for all six efforts.
    expect(cases.every((c) => c.covers.length % (EFFORTS.length + 1) === 0)).toBe(true);
    const results = await runAll(cases, 2, (c) => runReal("antigravity", realGemini, c, home, 120_000));
    for (const r of results) {
      expect(r.stderr, r.detail).not.toMatch(USAGE_ERRORS);
      expect(r.verdict, r.detail).toMatchObject({ kind: "failed", failure: { code: "not_logged_in" } });
    }
    await expectNothingRunning(home);
  }, 600_000);
});

describe("utility argv on the real CLIs", () => {
  it.each([
    ["codex", realCodex, "codex", 10_000],
    ["antigravity", realGemini, "gemini", 120_000],
  ] as const)(
    "runs a %s utility job to an auth/network failure, never a usage error",
    async (runtime, executable, command, timeoutMs) => {
      if (!existsSync(executable)) return;
      const home = join(root, `utility-${runtime}`);
      const outcome = await runUtilityJob(
        { job_id: `job-${runtime}`, payload: { runtime, prompt: "Reply with the word pong.", timeout_ms: timeoutMs } },
        { runtimes: runtimeTable({ [command]: executable }), home, signal: new AbortController().signal, env: credentialFreeEnv(home) },
      );
      const stderr = readFileSync(join(workDirFor(home, `job-${runtime}`), "stderr.log"), "utf8");
      expect(stderr).not.toMatch(USAGE_ERRORS);
      expect(outcome).toMatchObject({ kind: "failed" });
      if (outcome.kind === "failed") expect(["not_logged_in", "network_error"]).toContain(outcome.failure.code);
      await expectNothingRunning(home);
    },
    180_000,
  );
});

describe("employee_turn and schema-bound utility argv on the real CLIs", () => {
  it.each([
    ["claude", realClaude, "claude", 90_000],
    ["codex", realCodex, "codex", 10_000],
    ["antigravity", realGemini, "gemini", 120_000],
  ] as const)(
    "runs a %s employee turn (its tools, effort and identity) to an auth/network failure, never a usage error",
    async (runtime, executable, command, timeoutMs) => {
      if (!existsSync(executable)) return;
      const home = join(root, `turn-${runtime}`);
      const outcome = await runEmployeeTurnJob(
        {
          job_id: `job-turn-${runtime}`,
          payload: {
            runtime,
            model: MODELS[runtime],
            effort: "high",
            employee_id: "emp_c",
            employee: {
              name: "Conformance",
              identity: "Conformance employee.",
              capabilities: { allowed_tools: ["Read", "Write", "Bash(git *)"], denied_tools: ["WebFetch"] },
            },
            purpose: "goal_round",
            prompt: "# Goal round 1 for Conformance\nReply with the word pong.",
            timeout_ms: timeoutMs,
          },
        },
        { runtimes: runtimeTable({ [command]: executable }), home, signal: new AbortController().signal, env: credentialFreeEnv(home) },
      );
      const stderr = readFileSync(join(workDirFor(home, `job-turn-${runtime}`), "stderr.log"), "utf8");
      expect(stderr).not.toMatch(USAGE_ERRORS);
      expect(outcome).toMatchObject({ kind: "failed", failure: { ran: { runtime } } });
      if (outcome.kind === "failed") expect(["not_logged_in", "network_error"]).toContain(outcome.failure.code);
      await expectNothingRunning(home);
    },
    180_000,
  );

  it("runs a codex utility job bound to the acceptance schema to a network failure, never a schema or usage error", async () => {
    if (!existsSync(realCodex)) return;
    const home = join(root, "utility-acceptance");
    const outcome = await runUtilityJob(
      {
        job_id: "job-acceptance",
        payload: { runtime: "codex", prompt: "# Role: evaluator\nReply.", timeout_ms: 10_000, output_schema: "acceptance" },
      },
      { runtimes: runtimeTable({ codex: realCodex }), home, signal: new AbortController().signal, env: credentialFreeEnv(home) },
    );
    const stderr = readFileSync(join(workDirFor(home, "job-acceptance"), "stderr.log"), "utf8");
    expect(stderr).not.toMatch(USAGE_ERRORS);
    expect(stderr).not.toContain("output schema");
    expect(outcome).toMatchObject({ kind: "failed" });
    if (outcome.kind === "failed") expect(["not_logged_in", "network_error"]).toContain(outcome.failure.code);
    await expectNothingRunning(home);
  }, 60_000);
});
