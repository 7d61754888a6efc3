import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { sha256Hex } from "../../../src/lib/crypto";
import { call } from "../../factories";

/** Fixtures shared by the SOUL consolidation tests: an employee under the legacy SOUL path and a SOUL past its cap. */
export const bytes = (s: string) => new TextEncoder().encode(s).length;
export const RULE =
  "When a user corrects a booking date, repeat the corrected date in the first line and ask for confirmation before booking.";
export const proposal = (text: string) =>
  JSON.stringify({ proposed_changes: text, rationale: "users corrected dates twice", expected_improvement: "fewer corrections" });

export const HEAD = "# Identity\nYou are Kai, who books meeting rooms for the team.\n\n# Rules\n";
export const SENTENCES = [
  "Always confirm the room, the date and the time before booking anything.",
  "Prefer rooms on the same floor as the organiser when attendance is small.",
  "Never double-book a room; check the calendar feed first.",
  "Tell the organiser about accessibility features of the room.",
];
/** A SOUL of at least `size` bytes: the four rules over and over (what a consolidation can honestly merge). */
export function bigSoul(size: number): string {
  let s = HEAD;
  for (let i = 0; bytes(s) < size; i++) s += `${SENTENCES[i % SENTENCES.length]} (note ${i % 7})\n`;
  return s;
}
export const COMPRESSED = `${HEAD}${SENTENCES.join("\n")}\nThe notes 0 to 6 all say the same.`;
export const answer = (soul: string) => JSON.stringify({ consolidated_soul: soul, summary: "merged repeated rules" });

export async function putEmployee(id: string, evolution: Record<string, unknown> = {}) {
  const res = await call(`/v1/employees/${id}`, {
    method: "PUT",
    body: {
      name: `Employee ${id}`,
      runtime: "claude",
      model: { preferred: "claude-sonnet-4-6" },
      evolution: { gvu_enabled: true, gvu_cooldown_minutes: 0, legacy_soul_evolution: true, ...evolution },
    },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

/** Writes a SOUL past the cap straight into D1 (the API refuses one: an imported or pre-cap SOUL), with its fingerprint. */
export async function overCapSoul(id: string, content: string): Promise<number> {
  const current = (await call(`/v1/employees/${id}/soul`)).body;
  const version = current.version + 1;
  const sha = await sha256Hex(content);
  const at = new Date().toISOString();
  await env.DB.batch([
    env.DB.prepare(
      "INSERT INTO soul_versions (employee_id, version, content, sha256, source, parent_version, created_at, created_by) VALUES (?, ?, ?, ?, 'operator', ?, ?, 'test')",
    ).bind(id, version, content, sha, current.version, at),
    env.DB.prepare("UPDATE soul_heads SET version = ?, sha256 = ? WHERE employee_id = ?").bind(version, sha, id),
  ]);
  return version;
}
