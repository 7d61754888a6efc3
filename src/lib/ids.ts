import { toHex } from "./hex";

/** Opaque ids: a readable prefix and random hex (`node_` + 16 hex, `job_` + 16 hex, ...). */
export function newId(prefix: string, bytes = 8): string {
  return `${prefix}_${randomHex(bytes)}`;
}

export function randomHex(bytes: number): string {
  return toHex(crypto.getRandomValues(new Uint8Array(bytes)));
}
