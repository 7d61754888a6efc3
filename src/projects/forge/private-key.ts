import { AppError } from "../../lib/errors";

/**
 * GitHub hands out a GitHub App's private key as PKCS#1 PEM (`-----BEGIN RSA PRIVATE KEY-----`).
 * WebCrypto (what workerd has) imports only PKCS#8, and universal-github-app-jwt converts only
 * where node:crypto's createPrivateKey exists. So the key is converted here, in plain code: a
 * PKCS#8 PrivateKeyInfo is the PKCS#1 RSAPrivateKey wrapped in
 *
 *     SEQUENCE { INTEGER 0, SEQUENCE { OID rsaEncryption, NULL }, OCTET STRING <pkcs1 DER> }
 *
 * `openssl pkcs8 -topk8 -nocrypt -in key.pem` does the same offline; either form may be stored in
 * the GITHUB_APP_PRIVATE_KEY secret, with real newlines or `\n` escapes (as .dev.vars and CI
 * variables often carry them).
 */

const PKCS1 = "RSA PRIVATE KEY";
const PKCS8 = "PRIVATE KEY";
// AlgorithmIdentifier for rsaEncryption (1.2.840.113549.1.1.1) with NULL parameters.
const RSA_ALGORITHM = [0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00];

function derLength(length: number): number[] {
  if (length < 0x80) return [length];
  const bytes: number[] = [];
  for (let n = length; n > 0; n = Math.floor(n / 256)) bytes.unshift(n % 256);
  return [0x80 | bytes.length, ...bytes];
}

function derTag(tag: number, content: ArrayLike<number>): Uint8Array {
  const header = [tag, ...derLength(content.length)];
  const out = new Uint8Array(header.length + content.length);
  out.set(header, 0);
  out.set(Array.from(content), header.length);
  return out;
}

/** PKCS#1 RSAPrivateKey DER → PKCS#8 PrivateKeyInfo DER. */
export function pkcs1ToPkcs8Der(pkcs1: Uint8Array): Uint8Array {
  const version = [0x02, 0x01, 0x00];
  const octets = derTag(0x04, pkcs1);
  return derTag(0x30, [...version, ...RSA_ALGORITHM, ...octets]);
}

function base64ToBytes(b64: string): Uint8Array {
  const binary = atob(b64);
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

function bytesToBase64(bytes: Uint8Array): string {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary);
}

function pem(label: string, der: Uint8Array): string {
  const lines = bytesToBase64(der).match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----\n`;
}

const invalid = (why: string) =>
  // The detail never quotes the key: only what is wrong with its shape.
  new AppError("unavailable", `GITHUB_APP_PRIVATE_KEY is not usable: ${why}`);

/**
 * The key as PKCS#8 PEM (what WebCrypto and universal-github-app-jwt import), from PKCS#1 or
 * PKCS#8 PEM with real or escaped newlines. Encrypted and OpenSSH keys are refused.
 */
export function toPkcs8Pem(key: string): string {
  const text = key.replace(/\\n/g, "\n").replace(/\r/g, "").trim();
  const match = /^-----BEGIN ([A-Z0-9 ]+)-----\n([\s\S]*?)\n?-----END \1-----$/.exec(text);
  if (!match) throw invalid("expected one PEM block");
  const [, label, body] = match;
  if (label !== PKCS1 && label !== PKCS8)
    throw invalid(`'${label}' keys are not supported; use the PEM GitHub issued (RSA PRIVATE KEY) or PKCS#8`);
  if (/Proc-Type:|DEK-Info:/.test(body!)) throw invalid("the key is encrypted");
  const b64 = body!.replace(/\s+/g, "");
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) throw invalid("the PEM body is not base64");
  const der = base64ToBytes(b64);
  return label === PKCS8 ? pem(PKCS8, der) : pem(PKCS8, pkcs1ToPkcs8Der(der));
}
