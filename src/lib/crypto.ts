const encoder = new TextEncoder();

export async function sha256Hex(value: string): Promise<string> {
  return toHex(new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(value))));
}

/**
 * Lower-case hex of `bytes`, through a lookup table rather than toString/padStart/join per byte:
 * it runs on every token-bearing request and for every new id.
 */
export function toHex(bytes: Uint8Array): string {
  let hex = "";
  for (const byte of bytes) hex += HEX[byte];
  return hex;
}

const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, "0"));

/**
 * Constant-time equality of two secrets. Both sides are hashed first so the comparison always
 * runs over 32 bytes, whatever the inputs' lengths (timingSafeEqual throws on a length mismatch).
 */
export async function secretsEqual(a: string, b: string): Promise<boolean> {
  const [ha, hb] = await Promise.all([
    crypto.subtle.digest("SHA-256", encoder.encode(a)),
    crypto.subtle.digest("SHA-256", encoder.encode(b)),
  ]);
  return crypto.subtle.timingSafeEqual(ha, hb);
}

/**
 * `secretsEqual` against a configured secret (the bootstrap ADMIN_TOKEN), whose digest is computed
 * once per isolate: every authenticated request checks it first, so this saves a hash on each
 * (issue 26 item 5). Still constant time over two 32-byte digests.
 */
export async function matchesConfiguredSecret(presented: string, configured: string): Promise<boolean> {
  let digest = configuredDigests.get(configured);
  if (!digest) {
    digest = crypto.subtle.digest("SHA-256", encoder.encode(configured));
    configuredDigests.set(configured, digest);
  }
  const [ha, hb] = await Promise.all([crypto.subtle.digest("SHA-256", encoder.encode(presented)), digest]);
  return crypto.subtle.timingSafeEqual(ha, hb);
}

/** One entry per configured secret value (a rotated secret adds one; an isolate lives with one or two). */
const configuredDigests = new Map<string, Promise<ArrayBuffer>>();

/** Compares a stored hex SHA-256 with the hash of a presented secret, in constant time. */
export async function matchesHash(secret: string, storedHashHex: string): Promise<boolean> {
  const presented = await sha256Hex(secret);
  const a = encoder.encode(presented);
  const b = encoder.encode(storedHashHex);
  if (a.byteLength !== b.byteLength) return false;
  return crypto.subtle.timingSafeEqual(a, b);
}
