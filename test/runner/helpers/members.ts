/**
 * Runs one team member end to end the way a team stage will: scaffold → adapter → real process
 * (a fake CLI) → the member's crewplane MCP server → a fake team API; then classification, evidence
 * rows and artifact receipts.
 */
import { join } from "node:path";
import { checkArtifacts } from "../../../local-runner/src/members/receipts.ts";
import type { DeclaredArtifact } from "../../../local-runner/src/members/receipts.ts";
import { checkMemberMcpConfig, memberCliInput, writeScaffold } from "../../../local-runner/src/members/scaffold.ts";
import type { MemberRuntime, Scaffold } from "../../../local-runner/src/members/scaffold.ts";
import type { EmployeeCapabilities } from "../../../local-runner/src/members/tools.ts";
import { evidenceRows } from "../../../local-runner/src/runtimes/evidence.ts";
import { runtimeTable } from "../../../local-runner/src/runtimes/index.ts";
import { classifyCliRun, runCli } from "../../../local-runner/src/runtimes/invoke.ts";
import type { CliEntry } from "../../../local-runner/src/runtimes/invoke.ts";
import type { Effort, Role } from "../../../local-runner/src/runtimes/types.ts";
import type { FakeTeamApi } from "./fake-team-api.ts";

export const MODEL_FOR: Record<MemberRuntime, string> = {
  claude: "claude-sonnet-5-5",
  codex: "gpt-5.5",
  antigravity: "gemini-3.7-flash",
  grok: "grok-4",
};

export interface MemberRunOptions {
  home: string;
  api: FakeTeamApi;
  runtime: MemberRuntime;
  role: Role;
  /** Executables by command; a runtime's entry is picked like detection does. */
  executables: Partial<Record<string, string>>;
  taskId?: string;
  round?: number;
  effort?: Effort;
  prompt?: string;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
  capabilities?: EmployeeCapabilities;
  outputSchemaPath?: string;
  codexMcpApprovalMode?: string;
  /** Change the scaffold before the run (break it, for refusal tests). */
  tamper?: (scaffold: Scaffold) => Promise<void> | void;
  artifacts?: DeclaredArtifact[];
  signal?: AbortSignal;
}

export async function runMember(options: MemberRunOptions) {
  const taskId = options.taskId ?? "task_1";
  const round = options.round ?? 1;
  const token = options.api.mint({ employeeId: "emp_1", taskId, round, role: options.role });
  const scaffold = await writeScaffold({
    home: options.home,
    taskId,
    round,
    role: options.role,
    runtime: options.runtime,
    model: MODEL_FOR[options.runtime],
    ...(options.effort ? { effort: options.effort } : {}),
    employee: {
      id: "emp_1",
      config: { runtime: "claude", model: { preferred: "claude-opus-5-5" } },
      identity: "I am Aiko.",
      capabilities: options.capabilities,
    },
    member: { token, apiUrl: options.api.url },
  });
  await options.tamper?.(scaffold);
  const check = await checkMemberMcpConfig(scaffold);
  if (!check.ok) return { scaffold, token, refused: check } as const;

  const entry = runtimeTable(options.executables).get(options.runtime);
  if (!entry || entry.kind !== "cli") throw new Error(`no executable for ${options.runtime}`);
  const input = memberCliInput(scaffold, {
    prompt: options.prompt ?? `Do the ${options.role} work for ${taskId}.`,
    ...(options.outputSchemaPath ? { outputSchemaPath: options.outputSchemaPath } : {}),
    ...(options.codexMcpApprovalMode ? { codexMcpApprovalMode: options.codexMcpApprovalMode } : {}),
  });
  const timeoutMs = options.timeoutMs ?? 30_000;
  const run = await runCli(entry as CliEntry, input, {
    logDir: scaffold.dir,
    timeoutMs,
    env: { ...process.env, ...options.env },
    killGraceMs: 1000,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const verdict = classifyCliRun(entry as CliEntry, run, { timeoutMs, model: scaffold.model });
  const evidence = evidenceRows(run.evidence.nativeEvents, { runtime: options.runtime, model: scaffold.model, secrets: [token] });
  const receipts = options.artifacts ? await checkArtifacts(scaffold.workspaceDir, options.artifacts) : undefined;
  return { scaffold, token, run, verdict, evidence, receipts, entry: entry as CliEntry, refused: undefined } as const;
}

export const workspaceFile = (scaffold: Scaffold, path: string): string => join(scaffold.workspaceDir, path);
