import * as z from "zod";
import { label, prose } from "../lib/validation";
import { TEAM_ROLES } from "./settings";
import { packetIdSchema } from "../jobs/team-vocabulary";

/**
 * TaskPacket: the only thing that crosses a role boundary (seed 002). Every object is strict, so a
 * transcript, a vendor tool-call block, a thinking/reasoning payload or any other untyped field
 * cannot exist in a packet: the type refuses it, not a convention.
 */
export const PACKET_LIMITS = {
  maxBytes: 16 * 1024,
  objective: 2_000,
  outputFormat: 500,
  listItems: 16,
  boundary: 500,
  constraint: 280,
  audienceEntry: 100,
  acceptanceItems: 20,
  acceptance: 500,
  artifacts: 32,
  artifactPath: 512,
  refs: 16,
  ref: 200,
  findings: 32,
  claim: 1_000,
  evidencePerFinding: 8,
  evidence: 300,
  note: 500,
  tools: 32,
} as const;

const roleSchema = z.enum(TEAM_ROLES);
const list = <T extends z.ZodType>(item: T, max: number) => z.array(item).max(max).default([]);

const artifactRef = z
  .strictObject({
    path: prose(PACKET_LIMITS.artifactPath).optional(),
    id: label(PACKET_LIMITS.ref).optional(),
    sha256: z
      .string()
      .regex(/^[0-9a-f]{64}$/, "lower-case hex SHA-256")
      .optional(),
    bytes: z.number().int().min(0).optional(),
  })
  .refine((a) => a.path !== undefined || a.id !== undefined, "an artifact needs a path or an id");

const finding = z.strictObject({
  claim: prose(PACKET_LIMITS.claim),
  // A claim without a reference to evidence is not a finding: it belongs in open_questions.
  evidence: z.array(label(PACKET_LIMITS.evidence)).min(1).max(PACKET_LIMITS.evidencePerFinding),
});

export const taskPacket = z
  .strictObject({
    packet_id: packetIdSchema,
    goal_id: z.string().min(1).max(64),
    round: z.number().int().min(1).max(99),
    from_role: roleSchema,
    to_role: roleSchema,
    objective: prose(PACKET_LIMITS.objective),
    output_format: prose(PACKET_LIMITS.outputFormat).optional(),
    // Carried and stored; nothing enforces it at spawn time yet (the employee's capabilities do).
    tool_scope: z
      .strictObject({
        allowed: z.array(label(PACKET_LIMITS.audienceEntry)).max(PACKET_LIMITS.tools).optional(),
        denied: z.array(label(PACKET_LIMITS.audienceEntry)).max(PACKET_LIMITS.tools).optional(),
      })
      .optional(),
    boundaries: list(prose(PACKET_LIMITS.boundary), PACKET_LIMITS.listItems),
    constraints: list(prose(PACKET_LIMITS.constraint), PACKET_LIMITS.listItems),
    audience: list(label(PACKET_LIMITS.audienceEntry), PACKET_LIMITS.listItems),
    acceptance: list(prose(PACKET_LIMITS.acceptance), PACKET_LIMITS.acceptanceItems),
    depends_on: list(packetIdSchema, PACKET_LIMITS.listItems),
    artifacts: list(artifactRef, PACKET_LIMITS.artifacts),
    wiki_refs: list(label(PACKET_LIMITS.ref), PACKET_LIMITS.refs),
    memory_refs: list(label(PACKET_LIMITS.ref), PACKET_LIMITS.refs),
    state_refs: list(label(PACKET_LIMITS.ref), PACKET_LIMITS.refs),
    findings: list(finding, PACKET_LIMITS.findings),
    open_questions: list(prose(PACKET_LIMITS.note), PACKET_LIMITS.listItems),
    next_steps: list(prose(PACKET_LIMITS.note), PACKET_LIMITS.listItems),
    // What the member claims; the composer grades the real observation and corrects it.
    fidelity: z.enum(["full", "mcp_only", "none"]).default("none"),
    // Carried and stored, not wired: irreversible calls are guarded where they are made.
    irreversible: z.boolean().optional(),
    budget: z
      .strictObject({
        max_turns: z.number().int().min(1).max(100).optional(),
        max_tokens: z.number().int().min(1).max(10_000_000).optional(),
      })
      .optional(),
  })
  .refine((p) => p.from_role !== p.to_role, { message: "a packet goes from one role to another", path: ["to_role"] })
  .refine((p) => packetBytes(p) <= PACKET_LIMITS.maxBytes, { message: `a packet is at most ${PACKET_LIMITS.maxBytes} bytes of JSON` });

export type TaskPacket = z.infer<typeof taskPacket>;

export function packetBytes(packet: unknown): number {
  return new TextEncoder().encode(JSON.stringify(packet)).byteLength;
}
