/**
 * Lower-case hex of `bytes`, through a lookup table rather than toString/padStart/join per byte:
 * it runs on every token-bearing request, for every new id and for every sealed audit entry. A
 * module of its own, with no Workers-only API, so pure code (the audit chain's formats) can use it.
 */
export function toHex(bytes: Uint8Array): string {
  let hex = "";
  for (const byte of bytes) hex += HEX[byte];
  return hex;
}

const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, "0"));
