import { asc, desc } from "drizzle-orm";
import type { Db } from "../db/client";
import { auditCheckpoints, auditKeys } from "../db/schema";
import { checkpointBytes } from "./chain";
import type { Signer } from "./keys";
import type { Head } from "./seal";

/**
 * A checkpoint at least this often while the head moves (issue 24 asks for every minute): the
 * sealer signs the head when the last checkpoint is this old, and its alarm comes back for a tail
 * the last run left unsigned, so no event stays unsigned longer than this plus the sealing lag.
 */
export const CHECKPOINT_INTERVAL_MS = 10_000;

export interface CheckpointRow {
  seq: number;
  hash: string;
  at: string;
  kid: string;
  sig: string;
}

export async function lastCheckpoint(db: Db): Promise<CheckpointRow | null> {
  return (await db.select().from(auditCheckpoints).orderBy(desc(auditCheckpoints.seq)).limit(1).get()) ?? null;
}

export type SignOutcome = { signed: CheckpointRow } | { refused: "key_retired" };

/**
 * Signs `{seq, hash, at}` of the head under the signer's key. A key signing for the first time is
 * recorded with its first checkpoint in one batch (its validity starts there and the previous key's
 * ends). A key that was already followed by another is not used again: its validity range is closed.
 */
export async function signCheckpoint(db: Db, signer: Signer, head: Head, at: Date): Promise<SignOutcome> {
  const keys = await db.select({ kid: auditKeys.kid }).from(auditKeys).orderBy(asc(auditKeys.firstSeq)).all();
  const known = keys.findIndex((k) => k.kid === signer.kid);
  if (known >= 0 && known < keys.length - 1) return { refused: "key_retired" };
  const row: CheckpointRow = { seq: head.seq, hash: head.hash, at: at.toISOString(), kid: signer.kid, sig: "" };
  row.sig = await signer.sign(checkpointBytes(row));
  const insert = db.insert(auditCheckpoints).values(row);
  if (known >= 0) await insert;
  else
    await db.batch([
      db.insert(auditKeys).values({ kid: signer.kid, publicKey: signer.publicKey, firstSeq: head.seq, firstAt: row.at }),
      insert,
    ]);
  return { signed: row };
}
