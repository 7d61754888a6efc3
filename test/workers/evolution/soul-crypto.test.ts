import { describe, expect, it } from "vitest";
import { ENCRYPTED_PREFIX, protectRollbackDiff, readRollbackDiff } from "../../../src/evolution/soul-crypto";

const key = (fill: number) => btoa(String.fromCharCode(...new Uint8Array(32).fill(fill)));
const KEY = key(7);
const DIFF = "# Ada\nI respond in zh-TW. İstanbul STRAẞE 😀\n";

describe("rollback diff encryption", () => {
  it("round-trips through AES-256-GCM with a fresh IV each time", async () => {
    const a = await protectRollbackDiff(DIFF, KEY, "ver_1");
    const b = await protectRollbackDiff(DIFF, KEY, "ver_1");
    expect(a.ok && a.encrypted).toBe(true);
    if (!a.ok || !b.ok) return;
    expect(a.stored.startsWith(ENCRYPTED_PREFIX)).toBe(true);
    expect(a.stored).not.toContain("Ada");
    expect(a.stored).not.toBe(b.stored);
    expect(await readRollbackDiff(a.stored, KEY, "ver_1")).toEqual({ ok: true, text: DIFF, encrypted: true });
  });

  it("stores plain text without a key, and reads it back with or without one", async () => {
    const p = await protectRollbackDiff(DIFF);
    expect(p).toEqual({ ok: true, stored: DIFF, encrypted: false });
    expect(await protectRollbackDiff(DIFF, "")).toEqual({ ok: true, stored: DIFF, encrypted: false });
    expect(await readRollbackDiff(DIFF)).toEqual({ ok: true, text: DIFF, encrypted: false });
    expect(await readRollbackDiff(DIFF, KEY)).toEqual({ ok: true, text: DIFF, encrypted: false });
    // A plain text that looks like the envelope is marked so it is never mistaken for ciphertext.
    const tricky = await protectRollbackDiff(`${ENCRYPTED_PREFIX}not really`);
    expect(tricky.ok && tricky.stored).toBe(`plain:${ENCRYPTED_PREFIX}not really`);
    expect(await readRollbackDiff((tricky as { stored: string }).stored)).toEqual({
      ok: true,
      text: `${ENCRYPTED_PREFIX}not really`,
      encrypted: false,
    });
  });

  it("fails gracefully, never throwing, on a wrong key, a missing key, another version's context or a damaged envelope", async () => {
    const a = await protectRollbackDiff(DIFF, KEY, "ver_1");
    if (!a.ok) throw new Error("encrypt failed");
    expect(await readRollbackDiff(a.stored, key(8), "ver_1")).toEqual({ ok: false, reason: "decrypt_failed" });
    expect(await readRollbackDiff(a.stored, undefined, "ver_1")).toEqual({ ok: false, reason: "key_missing" });
    expect(await readRollbackDiff(a.stored, KEY, "ver_2")).toEqual({ ok: false, reason: "decrypt_failed" });
    expect(await readRollbackDiff(a.stored, KEY)).toEqual({ ok: false, reason: "decrypt_failed" });
    const flipped = a.stored.slice(0, -6) + (a.stored.at(-6) === "A" ? "B" : "A") + a.stored.slice(-5);
    expect(await readRollbackDiff(flipped, KEY, "ver_1")).toEqual({ ok: false, reason: "decrypt_failed" });
    expect(await readRollbackDiff(`${ENCRYPTED_PREFIX}%%%`, KEY)).toEqual({ ok: false, reason: "malformed" });
    expect(await readRollbackDiff(`${ENCRYPTED_PREFIX}AAAA`, KEY)).toEqual({ ok: false, reason: "malformed" });
    expect(await readRollbackDiff(a.stored, "short")).toEqual({ ok: false, reason: "invalid_key" });
  });

  it("refuses to store plain text when a configured key is unusable", async () => {
    expect(await protectRollbackDiff(DIFF, "not-base64!")).toEqual({ ok: false, reason: "invalid_key" });
    expect(await protectRollbackDiff(DIFF, btoa("16 bytes only!!!"))).toEqual({ ok: false, reason: "invalid_key" });
  });
});
