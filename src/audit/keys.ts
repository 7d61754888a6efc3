import * as z from "zod";
import { asc } from "drizzle-orm";
import type { Db } from "../db/client";
import { auditKeys } from "../db/schema";
import { base64url, fromBase64url, hex } from "./chain";

/**
 * The checkpoint signing key: the `AUDIT_SIGNING_KEY` secret, an Ed25519 private JWK
 * (`{"kty":"OKP","crv":"Ed25519","d":…,"x":…}`). It carries its public half (`x`), so the public key
 * needs no second secret; the key id is the first 16 hex digits of SHA-256 over the 32 raw public
 * key bytes.
 */
const b64url32 = z.string().regex(/^[A-Za-z0-9_-]{43}$/);
const privateJwk = z.object({ kty: z.literal("OKP"), crv: z.literal("Ed25519"), d: b64url32, x: b64url32 }).loose();

export interface Signer {
  kid: string;
  /** base64url of the 32 raw public key bytes (the JWK's `x`). */
  publicKey: string;
  sign(bytes: Uint8Array): Promise<string>;
}

export type SignerState = { ok: true; signer: Signer } | { ok: false; reason: "no_key" | "invalid_key" };

export async function keyId(publicKey: string): Promise<string> {
  return hex(await crypto.subtle.digest("SHA-256", fromBase64url(publicKey))).slice(0, 16);
}

/**
 * Imports the secret and proves it: a probe signed with `d` must verify under `x`, so a JWK whose
 * halves do not belong together never signs a checkpoint nobody could verify (fail closed).
 */
export async function loadSigner(secret: string | undefined): Promise<SignerState> {
  if (!secret) return { ok: false, reason: "no_key" };
  let jwk: z.infer<typeof privateJwk>;
  try {
    jwk = privateJwk.parse(JSON.parse(secret));
  } catch {
    return { ok: false, reason: "invalid_key" };
  }
  try {
    const algorithm = { name: "Ed25519" };
    const priv = await crypto.subtle.importKey("jwk", { kty: "OKP", crv: "Ed25519", d: jwk.d, x: jwk.x }, algorithm, false, ["sign"]);
    const pub = await crypto.subtle.importKey("raw", fromBase64url(jwk.x), algorithm, false, ["verify"]);
    const probe = new TextEncoder().encode("crewplane-audit key probe");
    const sig = await crypto.subtle.sign(algorithm, priv, probe);
    if (!(await crypto.subtle.verify(algorithm, pub, sig, probe))) return { ok: false, reason: "invalid_key" };
    return {
      ok: true,
      signer: {
        kid: await keyId(jwk.x),
        publicKey: jwk.x,
        sign: async (bytes) => base64url(new Uint8Array(await crypto.subtle.sign(algorithm, priv, bytes))),
      },
    };
  } catch {
    return { ok: false, reason: "invalid_key" };
  }
}

/** A key as `GET /.well-known/crewplane-audit-keys` publishes it (and the verifier's --keys reads it). */
export interface PublishedKey {
  kid: string;
  alg: "Ed25519";
  public_key_jwk: { kty: "OKP"; crv: "Ed25519"; x: string };
  /** The checkpoints it may sign: seq from_seq … to_seq, at not_before … not_after (null: still current). */
  from_seq: number;
  to_seq: number | null;
  not_before: string;
  not_after: string | null;
}

/** Every key with its validity range: from its first checkpoint until the next key's first. */
export async function publishedKeys(db: Db): Promise<PublishedKey[]> {
  const rows = await db.select().from(auditKeys).orderBy(asc(auditKeys.firstSeq)).all();
  return rows.map((k, i) => {
    const next = rows[i + 1];
    return {
      kid: k.kid,
      alg: "Ed25519",
      public_key_jwk: { kty: "OKP", crv: "Ed25519", x: k.publicKey },
      from_seq: k.firstSeq,
      to_seq: next ? next.firstSeq - 1 : null,
      not_before: k.firstAt,
      not_after: next ? next.firstAt : null,
    };
  });
}
