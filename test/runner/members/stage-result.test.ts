import { describe, expect, it } from "vitest";
import type { McpCallRecord } from "../../../local-runner/src/mcp/server.ts";
import { buildStageResult, declaredArtifacts, EVIDENCE_BYTES, toolActivity } from "../../../local-runner/src/members/stage-result.ts";
import type { StageObservation } from "../../../local-runner/src/members/stage-result.ts";
import type { NativeToolEvent } from "../../../local-runner/src/runtimes/types.ts";

const at = "2026-12-01T00:00:00.000Z";
const handoff = (packet_id: string, artifacts: McpCallRecord["artifacts"], ok = true): McpCallRecord => ({
  tool: "team_handoff",
  ok,
  at,
  packet_id,
  ...(ok ? { artifacts } : {}),
});

function observation(overrides: Partial<StageObservation> = {}): StageObservation {
  return {
    runtime: "codex",
    cli: "codex",
    stage: "execute",
    stream: { text: "done" },
    durationMs: 1200,
    effort: {},
    nativeEvents: [],
    calls: [],
    canWriteAcrossRounds: true,
    secrets: ["mbr_1.secret-value-123"],
    ...overrides,
  };
}

describe("declaredArtifacts", () => {
  it("takes the last version of each packet that reached the Worker, and each path once", () => {
    const calls = [
      handoff("p-1", [{ path: "notes/a.md" }, { path: "notes/old.md" }]),
      handoff("p-2", [{ path: "notes/b.md", sha256: "a".repeat(64) }]),
      handoff("p-3", [{ path: "notes/refused.md" }], false), // the Worker refused it: declares nothing
      handoff("p-1", [{ path: "notes/a.md", bytes: 6 }]), // the same packet again replaced its first version
      { tool: "memory_search", ok: true, at },
    ];
    expect(declaredArtifacts(calls)).toEqual([
      { path: "notes/b.md", sha256: "a".repeat(64) },
      { path: "notes/a.md", bytes: 6 },
    ]);
  });
});

describe("toolActivity", () => {
  const event = (tool: string, status: NativeToolEvent["status"]): NativeToolEvent => ({ tool, status });
  it("counts the CLI's own events per tool, failures and unfinished calls as err", () => {
    expect(
      toolActivity([event("Write", "ok"), event("Write", "error"), event("Bash", "incomplete"), event("Write", "ok")], [handoff("p", [])]),
    ).toEqual([
      { name: "Bash", ok: 0, err: 1 },
      { name: "Write", ok: 2, err: 1 },
    ]);
  });
  it("falls back to the MCP server's log when the stream showed no tool event", () => {
    expect(toolActivity([], [handoff("p", []), handoff("q", [], false)])).toEqual([
      { name: "mcp__crewplane__team_handoff", ok: 1, err: 1 },
    ]);
  });
});

describe("buildStageResult", () => {
  it("leaves usage, model and cost out when the run did not report them (unknown is not zero)", () => {
    const result = buildStageResult(observation());
    expect(result).not.toHaveProperty("usage");
    expect(result).not.toHaveProperty("model");
    expect(result).not.toHaveProperty("cost_usd");
    expect(result.evidence).toMatchObject({ native_tool_events: 0, mcp_calls: 0, rows: [] });
  });

  it("masks the member token in evidence and keeps the evidence within its byte budget", () => {
    const big = "x".repeat(3_000);
    const events: NativeToolEvent[] = Array.from({ length: 250 }, (_, i) => ({
      tool: "command_execution",
      status: "ok",
      input: { command: `echo mbr_1.secret-value-123 ${i}`, note: big },
      output: big,
    }));
    const result = buildStageResult(observation({ nativeEvents: events }));
    expect(result.evidence.native_tool_events).toBe(250);
    expect(result.evidence.rows).toHaveLength(201); // 200 rows + one native_tool_events_truncated row
    expect(result.evidence.rows.at(-1)).toMatchObject({ tool: "native_tool_events_truncated", count: 50 });
    expect(result.evidence.rows_trimmed).toBeDefined();
    expect(Buffer.byteLength(JSON.stringify(result.evidence.rows))).toBeLessThanOrEqual(EVIDENCE_BYTES);
    expect(JSON.stringify(result)).not.toContain("secret-value-123");
    expect(Buffer.byteLength(JSON.stringify(result))).toBeLessThan(512 * 1024);
  });

  it("marks a verify stage's answer without a verdict as unparseable", () => {
    expect(buildStageResult(observation({ stage: "verify", stream: { text: "Looks good" } }))).toMatchObject({
      verdict_unparseable: true,
    });
    expect(buildStageResult(observation({ stage: "verify", stream: { text: '{"verdict":"PASS","reasons":[]}' } }))).toMatchObject({
      verdict: "PASS",
      reasons: [],
    });
  });
});

describe("buildStageResult against the Worker's teamStageResult schema", () => {
  it("keeps an executor's result readable by the Worker when it declared more refused artifacts than one result carries", async () => {
    // The Worker's schema, loaded at run time (the runner's tsconfig does not type-check Worker sources).
    const workerSchema = "../../../src/jobs/team-stage-job.ts";
    const { teamStageResult } = (await import(/* @vite-ignore */ workerSchema)) as {
      teamStageResult: { safeParse(v: unknown): { success: boolean; data?: any; error?: unknown } };
    };
    // Three packets of 30 artifacts each (the Worker allows 32 per packet), all outside the workspace.
    const paths = Array.from({ length: 90 }, (_, i) => `../../outside/${i}.md`);
    const result = buildStageResult(
      observation({
        stream: { text: "done", usage: { input_tokens: 120, output_tokens: 30 } },
        receipts: {
          receipts: paths.map((path) => ({ path, state: "outside_workspace" as const, reason: "escapes_workspace" as const })),
          audits: paths.map((path) => ({
            type: "team_packet_artifact_refused" as const,
            path,
            detail: "resolves outside the employee workspace",
          })),
        },
      }),
    );
    const parsed = teamStageResult.safeParse(JSON.parse(JSON.stringify(result)));
    expect(parsed.success, JSON.stringify(parsed.error)).toBe(true);
    // What the Worker reads is still the stage's own measurement: usage and the refusals it audits.
    expect(parsed.data.usage).toEqual({ input_tokens: 120, output_tokens: 30 });
    expect(parsed.data.artifact_audits.length).toBeGreaterThan(0);
    expect(parsed.data.artifact_audits[0]).toMatchObject({ type: "team_packet_artifact_refused", path: "../../outside/0.md" });
  });
});
