import { toHex } from "./hex";

const encoder = new TextEncoder();

export async function sha256Hex(value: string): Promise<string> {
  return toHex(new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(value))));
}

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
 * once per isolate, the presented one's through `presentedDigest`: every authenticated request
 * checks it first, so this saves two hashes on each (issue 26 item 5). Still constant time over two
 * 64-character hex digests. Both digests are kept as bytes and read without awaiting when known: a
 * `Promise.all` and an encode per request were 1.5 % of the isolate's time under submit load.
 */
export async function matchesConfiguredSecret(presented: string, configured: string): Promise<boolean> {
  let digest = configuredDigests.get(configured);
  if (!digest) {
    digest = encoder.encode(await sha256Hex(configured));
    configuredDigests.set(configured, digest);
  }
  const { bytes } = cachedDigest(presented) ?? (await rememberDigest(presented));
  return crypto.subtle.timingSafeEqual(bytes, digest);
}

/** One entry per configured secret value (a rotated secret adds one; an isolate lives with one or two). */
const configuredDigests = new Map<string, Uint8Array>();

/**
 * A presented secret's SHA-256 (hex), remembered for a minute per isolate: a runner or node that
 * calls every few seconds is hashed once, not on every request (issue 26 item 5). It only saves the
 * hashing; whoever compares it with a stored hash still decides. The map is bounded and forgets
 * everything when full. (A hit is faster than a miss, but only for a value the caller presents
 * whole: it says nothing about any other secret.)
 */
export async function presentedDigest(secret: string): Promise<string> {
  return (cachedDigest(secret) ?? (await rememberDigest(secret))).hash;
}

/** The remembered digest of a presented secret, while it is fresh; read without awaiting. */
function cachedDigest(secret: string): PresentedDigest | undefined {
  const known = presentedDigests.get(secret);
  return known && known.until > Date.now() ? known : undefined;
}

async function rememberDigest(secret: string): Promise<PresentedDigest> {
  const hash = await sha256Hex(secret);
  const entry = { hash, bytes: encoder.encode(hash), until: Date.now() + PRESENTED_DIGEST_MS };
  if (presentedDigests.size >= PRESENTED_DIGESTS_MAX) presentedDigests.clear();
  presentedDigests.set(secret, entry);
  return entry;
}

interface PresentedDigest {
  hash: string;
  /** `hash` as UTF-8 bytes, for `timingSafeEqual`. */
  bytes: Uint8Array;
  until: number;
}

const presentedDigests = new Map<string, PresentedDigest>();
const PRESENTED_DIGEST_MS = 60_000;
const PRESENTED_DIGESTS_MAX = 10_000;

/** Compares a stored hex SHA-256 with the hash of a presented secret, in constant time. */
export async function matchesHash(secret: string, storedHashHex: string): Promise<boolean> {
  const { bytes: a } = cachedDigest(secret) ?? (await rememberDigest(secret));
  const b = encoder.encode(storedHashHex);
  if (a.byteLength !== b.byteLength) return false;
  return crypto.subtle.timingSafeEqual(a, b);
}
