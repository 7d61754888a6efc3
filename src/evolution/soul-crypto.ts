/**
 * The rollback diff's protection (seed 003 §4.6, §6.3): AES-256-GCM when a key is configured, plain
 * text otherwise (backward compatible), and a graceful failure when a stored diff cannot be decrypted:
 * a marked result, never an exception past the caller. The key is 32 bytes in base64 (a Worker
 * secret). An optional context (the version id) is bound as additional data, so a diff cannot be
 * moved to another version's row and still decrypt.
 *
 * Stored form: `aes256gcm:v1:<base64(iv ‖ ciphertext ‖ tag)>` with a random 12-byte IV; without a key,
 * the text itself, prefixed `plain:` only when it would otherwise read as either prefix.
 */
export const ENCRYPTED_PREFIX = "aes256gcm:v1:";
const PLAIN_PREFIX = "plain:";

export type EncryptResult = { ok: true; stored: string; encrypted: boolean } | { ok: false; reason: "invalid_key" };
export type DecryptResult =
  { ok: true; text: string; encrypted: boolean } | { ok: false; reason: "key_missing" | "invalid_key" | "malformed" | "decrypt_failed" };

function fromBase64(b64: string): Uint8Array | null {
  try {
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64) || b64.length % 4 !== 0) return null;
    return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  } catch {
    return null;
  }
}

function toBase64(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

async function importKey(keyB64: string): Promise<CryptoKey | null> {
  const raw = fromBase64(keyB64.trim());
  if (!raw || raw.length !== 32) return null;
  try {
    return await crypto.subtle.importKey("raw", raw, { name: "AES-GCM" }, false, ["encrypt", "decrypt"]);
  } catch {
    return null;
  }
}

const enc = new TextEncoder();

/**
 * Encrypts when `keyB64` is given (an empty or absent key means "no key configured": plain). A key
 * that is configured but unusable is refused, not silently ignored: storing plain text there would
 * quietly drop the protection the operator asked for.
 */
export async function protectRollbackDiff(text: string, keyB64?: string | null, context?: string): Promise<EncryptResult> {
  if (keyB64 === undefined || keyB64 === null || keyB64.trim() === "") {
    const needsMark = text.startsWith(ENCRYPTED_PREFIX) || text.startsWith(PLAIN_PREFIX);
    return { ok: true, stored: needsMark ? PLAIN_PREFIX + text : text, encrypted: false };
  }
  const key = await importKey(keyB64);
  if (!key) return { ok: false, reason: "invalid_key" };
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const params: SubtleCryptoEncryptAlgorithm = {
    name: "AES-GCM",
    iv,
    ...(context !== undefined ? { additionalData: enc.encode(context) } : {}),
  };
  const ct = new Uint8Array(await crypto.subtle.encrypt(params, key, enc.encode(text)));
  const out = new Uint8Array(iv.length + ct.length);
  out.set(iv);
  out.set(ct, iv.length);
  return { ok: true, stored: ENCRYPTED_PREFIX + toBase64(out), encrypted: true };
}

/** Reads a stored diff back. Never throws: a failure comes back marked, and the caller degrades gracefully. */
export async function readRollbackDiff(stored: string, keyB64?: string | null, context?: string): Promise<DecryptResult> {
  try {
    if (stored.startsWith(PLAIN_PREFIX)) return { ok: true, text: stored.slice(PLAIN_PREFIX.length), encrypted: false };
    if (!stored.startsWith(ENCRYPTED_PREFIX)) return { ok: true, text: stored, encrypted: false };
    if (keyB64 === undefined || keyB64 === null || keyB64.trim() === "") return { ok: false, reason: "key_missing" };
    const key = await importKey(keyB64);
    if (!key) return { ok: false, reason: "invalid_key" };
    const data = fromBase64(stored.slice(ENCRYPTED_PREFIX.length));
    if (!data || data.length < 12 + 16) return { ok: false, reason: "malformed" };
    const params: SubtleCryptoEncryptAlgorithm = {
      name: "AES-GCM",
      iv: data.subarray(0, 12),
      ...(context !== undefined ? { additionalData: enc.encode(context) } : {}),
    };
    try {
      const pt = await crypto.subtle.decrypt(params, key, data.subarray(12));
      return { ok: true, text: new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(pt), encrypted: true };
    } catch {
      return { ok: false, reason: "decrypt_failed" };
    }
  } catch {
    return { ok: false, reason: "decrypt_failed" };
  }
}
