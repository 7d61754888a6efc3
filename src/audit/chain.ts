import { canonicalJson } from "../jobs/canonical";
import { toHex } from "../lib/hex";

/**
 * The audit chain's formats (issue 24), pure. The offline verifier (`audit-verifier/`) implements
 * the same bytes in plain Node; `test/e2e/audit.e2e.test.ts` checks the two agree.
 *
 * An entry's hash is SHA-256 (lowercase hex) of the UTF-8 bytes of the canonical JSON (keys sorted at
 * every level, no whitespace: `src/jobs/canonical.ts`, the form approvals' action_hash uses) of
 *
 *   {created_at, id, payload, prev_hash, ref?, seq, subject, type}
 *
 * where id, type, subject, payload and created_at are the event as stored (payload parsed), seq the
 * entry's place in the chain (1, 2, …), prev_hash the previous entry's hash (GENESIS_HASH for seq 1)
 * and ref, present only for an event that closes a role-ledger stage, `{"role_turn":{hash, seq, task_id}}`.
 */
export const GENESIS_HASH = "0".repeat(64);

/** The signed bytes of a checkpoint are the canonical JSON of `{at, hash, kid, seq, v}` with this `v`. */
export const CHECKPOINT_VERSION = "crewplane-audit-checkpoint/1";

export const EXPORT_FORMAT = "crewplane-audit-export/1";

export interface ChainEvent {
  id: number;
  type: string;
  subject: string | null;
  payload: unknown;
  created_at: string;
}

export interface RoleTurnRef {
  role_turn: { task_id: string; seq: number; hash: string };
}

export interface ChainEntry extends ChainEvent {
  seq: number;
  prev_hash: string;
  ref?: RoleTurnRef;
}

const encoder = new TextEncoder();

/** Exactly the hashed fields, whatever else the object carries; an absent ref is no key at all. */
export function entryBytes(e: ChainEntry): Uint8Array {
  const hashed = {
    created_at: e.created_at,
    id: e.id,
    payload: e.payload,
    prev_hash: e.prev_hash,
    seq: e.seq,
    subject: e.subject,
    type: e.type,
  };
  return encoder.encode(canonicalJson(e.ref ? { ...hashed, ref: e.ref } : hashed));
}

export async function entryHash(entry: ChainEntry): Promise<string> {
  return hex(await crypto.subtle.digest("SHA-256", entryBytes(entry)));
}

export interface Checkpoint {
  seq: number;
  hash: string;
  at: string;
  kid: string;
}

export function checkpointBytes(cp: Checkpoint): Uint8Array {
  return encoder.encode(canonicalJson({ at: cp.at, hash: cp.hash, kid: cp.kid, seq: cp.seq, v: CHECKPOINT_VERSION }));
}

/**
 * The stored payload, parsed. Stored text that no longer parses (a tampered row) is kept as the
 * string it is, so its entry's hash no longer matches instead of the export failing.
 */
export function parsePayload(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Events of these types close a role-ledger stage; the ledger row is appended before them. */
const STAGE_END = /_stage_(completed|failed)$/;

/** The role-ledger stage an event refers to (its `payload.stage_id`), when it closes one. */
export function stageIdOf(type: string, payload: unknown): string | null {
  if (!STAGE_END.test(type) || !payload || typeof payload !== "object") return null;
  const id = (payload as Record<string, unknown>).stage_id;
  return typeof id === "string" && id.length > 0 ? id : null;
}

export function hex(buf: ArrayBuffer): string {
  return toHex(new Uint8Array(buf));
}

export function base64url(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export function fromBase64url(text: string): Uint8Array {
  const b64 = text.replace(/-/g, "+").replace(/_/g, "/");
  const bin = atob(b64 + "=".repeat((4 - (b64.length % 4)) % 4));
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}
