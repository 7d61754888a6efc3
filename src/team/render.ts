import { randomHex } from "../lib/ids";
import type { TaskPacket } from "./packet";

/**
 * Rendering packets into a stage prompt. Constraints and audience go under protected headings that
 * a prompt compressor must never cut (a measured failure: the budget taxed the boundaries first and
 * explicit constraints silently became implicit ones). The exemption is bound to provenance, not
 * text: each heading is followed by a marker line carrying a fresh 32-byte random nonce, and only a
 * heading followed by exactly that line opens a protected span. Packet text can neither contain a
 * marker (every `<!--` in it is neutralised) nor know the nonce.
 */
export const PROTECTED_HEADINGS = { constraints: "## Constraints", audience: "## Audience" } as const;

export function newProtectedMarker(): string {
  return `<!-- crewplane-protected:${randomHex(32)} -->`;
}

/** Untrusted text: no HTML comment can open in it, so no marker can be forged or closed early. */
export function neutralize(text: string): string {
  return text.replaceAll("<!--", "<\u200B!--").replaceAll("-->", "--\u200B>");
}

const bullets = (items: readonly string[]) => items.map((i) => `- ${neutralize(i)}`).join("\n");

/**
 * One packet as markdown: its compressible parts first, then the protected spans, which run to the
 * packet's end marker. Empty lists are left out rather than shown as "none".
 */
export function renderPacket(
  packet: TaskPacket,
  marker: string,
  opts: { artifactLines?: ReadonlyMap<string, string> } = {},
): { compressible: string; protected: string } {
  const parts: string[] = [
    `### Packet ${packet.packet_id} (${packet.from_role} → ${packet.to_role}, round ${packet.round})`,
    `Objective: ${neutralize(packet.objective)}`,
  ];
  if (packet.output_format) parts.push(`Output format: ${neutralize(packet.output_format)}`);
  if (packet.depends_on.length) parts.push(`Depends on: ${packet.depends_on.join(", ")}`);
  if (packet.boundaries.length) parts.push(`Boundaries:\n${bullets(packet.boundaries)}`);
  if (packet.acceptance.length) parts.push(`Acceptance:\n${bullets(packet.acceptance)}`);
  if (packet.findings.length)
    parts.push(
      `Findings:\n${packet.findings.map((f) => `- ${neutralize(f.claim)} [evidence: ${f.evidence.map(neutralize).join("; ")}]`).join("\n")}`,
    );
  if (packet.open_questions.length) parts.push(`Open questions:\n${bullets(packet.open_questions)}`);
  if (packet.next_steps.length) parts.push(`Next steps:\n${bullets(packet.next_steps)}`);
  if (packet.artifacts.length) {
    const lines = packet.artifacts.map((a) => {
      const key = a.path ?? `id:${a.id}`;
      return `- ${neutralize(opts.artifactLines?.get(key) ?? `${key} unchecked`)}`;
    });
    parts.push(`artifacts:\n${lines.join("\n")}`);
  }
  const refs = [
    ...packet.wiki_refs.map((r) => `wiki:${r}`),
    ...packet.memory_refs.map((r) => `memory:${r}`),
    ...packet.state_refs.map((r) => `state:${r}`),
  ];
  if (refs.length) parts.push(`References: ${refs.map(neutralize).join(", ")}`);

  const prot: string[] = [];
  if (packet.constraints.length) prot.push(`${PROTECTED_HEADINGS.constraints}\n${marker}\n${bullets(packet.constraints)}`);
  if (packet.audience.length) prot.push(`${PROTECTED_HEADINGS.audience}\n${marker}\n${bullets(packet.audience)}`);
  return { compressible: parts.join("\n\n"), protected: prot.length ? `${prot.join("\n\n")}\n${endMarker(marker)}` : "" };
}

export function endMarker(marker: string): string {
  return marker.replace("crewplane-protected:", "crewplane-protected-end:");
}

/** A block of a prompt: protected blocks are never cut. */
export interface PromptBlock {
  text: string;
  protected: boolean;
}

const encoder = new TextEncoder();
const bytes = (s: string) => encoder.encode(s).byteLength;

function truncateToBytes(text: string, max: number): string {
  if (bytes(text) <= max) return text;
  const note = "\n[… truncated to fit the stage budget]";
  const room = Math.max(0, max - bytes(note));
  let out = "";
  let used = 0;
  for (const ch of text) {
    const b = bytes(ch);
    if (used + b > room) break;
    out += ch;
    used += b;
  }
  return out + note;
}

/**
 * Joins blocks into a prompt of at most `maxBytes`. When it does not fit, the compressible blocks
 * are cut (largest first, evenly) and the protected ones are kept verbatim; if the protected blocks
 * alone do not fit, that is an error, never a silent cut.
 */
export function composePrompt(blocks: readonly PromptBlock[], maxBytes: number): string {
  const sep = "\n\n";
  const total = blocks.reduce((n, b) => n + bytes(b.text), 0) + bytes(sep) * Math.max(0, blocks.length - 1);
  if (total <= maxBytes) return blocks.map((b) => b.text).join(sep);
  const fixed = blocks.filter((b) => b.protected).reduce((n, b) => n + bytes(b.text), 0) + bytes(sep) * Math.max(0, blocks.length - 1);
  let room = maxBytes - fixed;
  const cuttable = blocks.map((b, i) => ({ i, size: b.protected ? 0 : bytes(b.text) })).filter((c) => c.size > 0);
  if (room < cuttable.length * 64) throw new Error(`protected prompt content alone needs ${fixed} of ${maxBytes} bytes`);
  // Water-filling: each compressible block gets an equal share, small ones give their spare share back.
  const caps = new Map<number, number>();
  let pending = [...cuttable].sort((a, b) => a.size - b.size);
  while (pending.length > 0) {
    const share = Math.floor(room / pending.length);
    const small = pending.filter((c) => c.size <= share);
    if (small.length === 0) {
      for (const c of pending) caps.set(c.i, share);
      break;
    }
    for (const c of small) {
      caps.set(c.i, c.size);
      room -= c.size;
    }
    pending = pending.filter((c) => c.size > share);
  }
  return blocks.map((b, i) => (b.protected ? b.text : truncateToBytes(b.text, caps.get(i) ?? 0))).join(sep);
}
