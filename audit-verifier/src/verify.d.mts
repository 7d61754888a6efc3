import type { KeyObject } from "node:crypto";

export const GENESIS_HASH: string;
export const EXPORT_FORMAT: string;
export const CHECKPOINT_VERSION: string;
export const REASONS: readonly string[];

export type Reason =
  "changed" | "missing" | "reordered" | "unsigned_tail" | "unknown_key" | "key_out_of_range" | "bad_signature" | "truncated" | "malformed";

export interface EntryFields {
  seq: number;
  prev_hash: string;
  id: number;
  type: string;
  subject: string | null;
  payload: unknown;
  created_at: string;
  ref?: unknown;
}

export interface KnownKey {
  kid: string;
  publicKey: KeyObject;
  from_seq: number;
  to_seq: number | null;
  not_before: string | null;
  not_after: string | null;
}

export interface VerifyResult {
  ok: boolean;
  scope: "admin" | "public" | null;
  keys: "pinned" | "export";
  first_seq: number | null;
  declared_to_seq: number | null;
  last_seq: number | null;
  head_hash: string | null;
  signed_through: number | null;
  events: number;
  redacted: number;
  checkpoints: number;
  verified_entries: number;
  anchored_at_genesis: boolean | null;
  failure?: { seq: number | null; reason: Reason; detail: string };
}

export function entryHash(entry: EntryFields): string;
export function checkpointMessage(cp: { seq: number; hash: string; at: string; kid: string }): Buffer;
export function parseKeys(doc: unknown): Map<string, KnownKey>;
export function verifyExport(
  lines: Iterable<string> | AsyncIterable<string>,
  options?: { pinnedKeys?: Map<string, KnownKey> | null },
): Promise<VerifyResult>;
