/**
 * What a finished team stage reports (the Worker's `teamStageResult`, src/jobs/team-stage-job.ts). Pure:
 * it takes what the run observed — the CLI's stream and native tool events, the member's MCP call
 * log, the artifact receipts — and shapes it. Unknown stays unknown: no usage → no `usage`; a model
 * the stream did not name → no `model`.
 */
import type { McpCallRecord } from "../mcp/server.ts";
import type { RanReport, Usage } from "../protocol.ts";
import { evidenceRows } from "../runtimes/evidence.ts";
import type { EvidenceRow } from "../runtimes/evidence.ts";
import type { EffortMapping, NativeToolEvent } from "../runtimes/types.ts";
import type { DeclaredArtifact, Receipt, ReceiptAudit } from "./receipts.ts";
import { crewplaneToolName } from "./tools.ts";
import type { CrewplaneTool } from "./tools.ts";
import { parseVerdict } from "./verdict.ts";

/** Keeps the result well under the Worker's 512 KiB (src/jobs/limits.ts) whatever the CLI printed. */
export const TEXT_LIMIT = 60_000;
export const EVIDENCE_BYTES = 192 * 1024;
/** The Worker takes at most 64 receipts (and 64 audit rows) per result. */
export const RECEIPT_LIMIT = 64;
export const PATH_LIMIT = 512;

/** Who serves each CLI (the ledger's `provider`). */
const PROVIDER: Record<string, string> = { claude: "anthropic", codex: "openai", agy: "google", gemini: "google", grok: "xai" };

/** Who serves a CLI (`claude` → `anthropic`); undefined for one this table does not know. */
export function providerOf(cli: string): string | undefined {
  return PROVIDER[cli];
}

/** What ran, for a stage that failed after its CLI was spawned: the model only when the stream named it. */
export function ranReport(runtime: string, cli: string, streamModel: string | undefined): RanReport {
  const provider = PROVIDER[cli];
  return { runtime, ...(provider ? { provider } : {}), ...(streamModel ? { model: streamModel } : {}) };
}

export interface StageReceipt {
  path: string;
  state: "exists" | "missing" | "mismatch" | "outside_workspace" | "unverified";
  bytes?: number;
  sha256?: string;
  declared_sha256?: string;
  declared_bytes?: number;
  reason?: string;
}

export interface StageResult {
  text: string;
  runtime: string;
  cli: string;
  provider?: string;
  model?: string;
  session_id?: string;
  duration_ms: number;
  usage?: Usage;
  cost_usd?: number;
  message_recovered?: true;
  effort?: EffortMapping;
  verdict?: "PASS" | "FAIL";
  reasons?: string[];
  verdict_unparseable?: true;
  evidence: { native_tool_events: number; mcp_calls: number; rows: EvidenceRow[]; rows_trimmed?: "outputs" | "inputs" };
  tool_activity: Array<{ name: string; ok: number; err: number }>;
  packets: string[];
  artifact_receipts?: StageReceipt[];
  artifact_audits?: ReceiptAudit[];
  /** antigravity and grok members keep the scaffold as cwd: nothing they write outlives the round. */
  can_write_across_rounds: boolean;
}

export interface StageObservation {
  runtime: string;
  cli: string;
  /** `synthesize` (a utility member) is read-only like a verifier, but its text is its result: no verdict. */
  stage: "plan" | "execute" | "verify" | "repair" | "synthesize";
  stream: { text: string; model?: string; sessionId?: string; usage?: Usage; costUsd?: number; messageRecovered?: boolean };
  durationMs: number;
  effort: EffortMapping;
  nativeEvents: readonly NativeToolEvent[];
  calls: readonly McpCallRecord[];
  receipts?: { receipts: readonly Receipt[]; audits: readonly ReceiptAudit[] };
  canWriteAcrossRounds: boolean;
  /** Strings masked wherever they appear in evidence (the member token). */
  secrets: readonly string[];
}

export function buildStageResult(o: StageObservation): StageResult {
  const verdict = o.stage === "verify" ? parseVerdict(o.stream.text) : undefined;
  const usage = o.stream.usage && Object.keys(o.stream.usage).length > 0 ? o.stream.usage : undefined;
  const provider = PROVIDER[o.cli];
  return {
    text: o.stream.text.length > TEXT_LIMIT ? `${o.stream.text.slice(0, TEXT_LIMIT - 1)}…` : o.stream.text,
    runtime: o.runtime,
    cli: o.cli,
    ...(provider ? { provider } : {}),
    ...(o.stream.model ? { model: o.stream.model } : {}),
    ...(o.stream.sessionId ? { session_id: o.stream.sessionId } : {}),
    duration_ms: o.durationMs,
    ...(usage ? { usage } : {}),
    ...(o.stream.costUsd !== undefined ? { cost_usd: o.stream.costUsd } : {}),
    ...(o.stream.messageRecovered ? { message_recovered: true as const } : {}),
    ...(o.effort.requested !== undefined ? { effort: o.effort } : {}),
    ...(verdict
      ? { verdict: verdict.verdict, reasons: verdict.reasons }
      : o.stage === "verify"
        ? { verdict_unparseable: true as const }
        : {}),
    evidence: {
      native_tool_events: o.nativeEvents.length,
      mcp_calls: o.calls.length,
      // The rows name the model only when the stream did: the requested one is what was asked, not who answered.
      ...boundedRows(evidenceRows(o.nativeEvents, { runtime: o.runtime, model: o.stream.model, secrets: o.secrets })),
    },
    tool_activity: toolActivity(o.nativeEvents, o.calls),
    packets: handedOff(o.calls),
    ...(o.receipts
      ? {
          artifact_receipts: o.receipts.receipts.slice(0, RECEIPT_LIMIT).map(stageReceipt),
          // The same cap as the receipts (the Worker's schema takes 64 of each): one more would make
          // the Worker drop the whole result, usage and verdict included.
          artifact_audits: o.receipts.audits.slice(0, RECEIPT_LIMIT),
        }
      : {}),
    can_write_across_rounds: o.canWriteAcrossRounds,
  };
}

/**
 * Per tool name, calls that succeeded and calls that did not (failed, declined, or never finished).
 * The CLI's own stream is the primary record; when it showed no tool event at all, the MCP server's
 * log stands in, so a member whose CLI hides MCP calls still shows the calls it made.
 */
export function toolActivity(events: readonly NativeToolEvent[], calls: readonly McpCallRecord[]): StageResult["tool_activity"] {
  const totals = new Map<string, { ok: number; err: number }>();
  const add = (name: string, ok: boolean) => {
    const t = totals.get(name) ?? { ok: 0, err: 0 };
    if (ok) t.ok += 1;
    else t.err += 1;
    totals.set(name, t);
  };
  if (events.length > 0) for (const e of events) add(e.tool, e.status === "ok");
  else for (const c of calls) add(crewplaneToolName(c.tool as CrewplaneTool), c.ok);
  return [...totals.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .slice(0, 200)
    .map(([name, t]) => ({ name: name.slice(0, 100), ...t }));
}

/** Packet ids the Worker accepted from this member, in first-hand-off order. */
export function handedOff(calls: readonly McpCallRecord[]): string[] {
  const ids: string[] = [];
  for (const c of calls) if (c.tool === "team_handoff" && c.ok && c.packet_id && !ids.includes(c.packet_id)) ids.push(c.packet_id);
  return ids;
}

/**
 * The artifacts this member declared in the packets the Worker accepted. A packet handed off again
 * under the same id replaced its earlier version, so only its last declaration counts; a path
 * declared twice is checked once (the last declaration).
 */
export function declaredArtifacts(calls: readonly McpCallRecord[]): DeclaredArtifact[] {
  const lastByPacket = new Map<string, NonNullable<McpCallRecord["artifacts"]>>();
  for (const c of calls) {
    if (c.tool !== "team_handoff" || !c.ok || !c.packet_id) continue;
    lastByPacket.delete(c.packet_id);
    lastByPacket.set(c.packet_id, c.artifacts ?? []);
  }
  const byPath = new Map<string, DeclaredArtifact>();
  for (const artifacts of lastByPacket.values()) {
    for (const a of artifacts) {
      if (!a.path) continue; // an id-only reference has nothing on disk to check
      byPath.delete(a.path);
      byPath.set(a.path, { path: a.path, ...(a.sha256 ? { sha256: a.sha256 } : {}), ...(a.bytes !== undefined ? { bytes: a.bytes } : {}) });
    }
  }
  return [...byPath.values()];
}

/** A receipt as the Worker's schema takes it (path within 512 characters, a declared hash only when well-formed). */
export function stageReceipt(r: Receipt): StageReceipt {
  const path = r.path.length > PATH_LIMIT ? `${r.path.slice(0, PATH_LIMIT - 1)}…` : r.path;
  switch (r.state) {
    case "exists":
      return { path, state: "exists", bytes: r.bytes, sha256: r.sha256 };
    case "missing":
      return { path, state: "missing" };
    case "mismatch":
      return {
        path,
        state: "mismatch",
        bytes: r.bytes,
        sha256: r.sha256,
        ...(r.declared_sha256 && /^[0-9a-f]{64}$/.test(r.declared_sha256) ? { declared_sha256: r.declared_sha256 } : {}),
        ...(r.declared_bytes !== undefined ? { declared_bytes: r.declared_bytes } : {}),
      };
    case "outside_workspace":
      return { path, state: "outside_workspace", reason: r.reason };
    case "unverified":
      return { path, state: "unverified", reason: r.reason, ...(r.bytes !== undefined ? { bytes: r.bytes } : {}) };
  }
}

/** Rows within EVIDENCE_BYTES: outputs go first, then inputs; the rows themselves (tool, status) stay. */
function boundedRows(rows: EvidenceRow[]): { rows: EvidenceRow[]; rows_trimmed?: "outputs" | "inputs" } {
  const size = (r: unknown) => Buffer.byteLength(JSON.stringify(r));
  if (size(rows) <= EVIDENCE_BYTES) return { rows };
  const noOutputs = rows.map((r) => {
    const { output: _o, ...rest } = r as EvidenceRow & { output?: string };
    return rest as EvidenceRow;
  });
  if (size(noOutputs) <= EVIDENCE_BYTES) return { rows: noOutputs, rows_trimmed: "outputs" };
  const noInputs = noOutputs.map((r) => {
    const { input: _i, error, ...rest } = r as EvidenceRow & { input?: unknown; error?: string };
    return { ...rest, ...(error !== undefined ? { error: error.slice(0, 200) } : {}) } as EvidenceRow;
  });
  return { rows: noInputs, rows_trimmed: "inputs" };
}
