/**
 * A GitHub App's key pair as GitHub issues it: the private key as PKCS#1 PEM
 * (`-----BEGIN RSA PRIVATE KEY-----`, 64-character lines), made fresh per test file so no key is
 * committed. The stand-in verifies the App's JWTs with the public half.
 */

const b64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));

/** Reads one DER TLV at `offset`: its tag, where its content starts and how long it is. */
function tlv(der: Uint8Array, offset: number): { tag: number; start: number; length: number } {
  const tag = der[offset]!;
  let length = der[offset + 1]!;
  let start = offset + 2;
  if (length & 0x80) {
    const n = length & 0x7f;
    length = 0;
    for (let i = 0; i < n; i++) length = length * 256 + der[start + i]!;
    start += n;
  }
  return { tag, start, length };
}

/** The RSAPrivateKey (PKCS#1) inside a PrivateKeyInfo (PKCS#8): its third element's octets. */
export function pkcs8ToPkcs1(pkcs8: Uint8Array): Uint8Array {
  const outer = tlv(pkcs8, 0);
  const version = tlv(pkcs8, outer.start);
  const algorithm = tlv(pkcs8, version.start + version.length);
  const key = tlv(pkcs8, algorithm.start + algorithm.length);
  if (outer.tag !== 0x30 || version.tag !== 0x02 || algorithm.tag !== 0x30 || key.tag !== 0x04) throw new Error("not a PKCS#8 key");
  return pkcs8.slice(key.start, key.start + key.length);
}

export function pemBlock(label: string, der: Uint8Array): string {
  return `-----BEGIN ${label}-----\n${b64(der)
    .match(/.{1,64}/g)!
    .join("\n")}\n-----END ${label}-----\n`;
}

export interface AppKeys {
  /** PKCS#1 PEM, the format GitHub's "Generate a private key" download has. */
  privateKeyPem: string;
  /** The same key as PKCS#8 PEM. */
  pkcs8Pem: string;
  publicKey: CryptoKey;
}

export async function githubAppKeys(): Promise<AppKeys> {
  const pair = (await crypto.subtle.generateKey(
    { name: "RSASSA-PKCS1-v1_5", modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" },
    true,
    ["sign", "verify"],
  )) as CryptoKeyPair;
  const pkcs8 = new Uint8Array((await crypto.subtle.exportKey("pkcs8", pair.privateKey)) as ArrayBuffer);
  return {
    privateKeyPem: pemBlock("RSA PRIVATE KEY", pkcs8ToPkcs1(pkcs8)),
    pkcs8Pem: pemBlock("PRIVATE KEY", pkcs8),
    publicKey: pair.publicKey,
  };
}

const fromBase64Url = (s: string) => Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));

/** The claims of an RS256 JWT whose signature `publicKey` verifies, or null. */
export async function verifyJwt(jwt: string, publicKey: CryptoKey): Promise<Record<string, unknown> | null> {
  const parts = jwt.split(".");
  if (parts.length !== 3) return null;
  const [header, payload, signature] = parts as [string, string, string];
  try {
    const head = JSON.parse(new TextDecoder().decode(fromBase64Url(header)));
    if (head.alg !== "RS256") return null;
    const ok = await crypto.subtle.verify(
      "RSASSA-PKCS1-v1_5",
      publicKey,
      fromBase64Url(signature),
      new TextEncoder().encode(`${header}.${payload}`),
    );
    return ok ? JSON.parse(new TextDecoder().decode(fromBase64Url(payload))) : null;
  } catch {
    return null;
  }
}
