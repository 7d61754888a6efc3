/**
 * The confusables fold's generated table (src/council/confusables-table.ts) is what
 * scripts/lib/confusables.mjs derives from the installed unhomoglyph: a stale file fails here, with
 * the command that regenerates it.
 */
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { CONFUSABLE_PROTOTYPES } from "../../src/council/confusables-table.ts";
import { asciiPrototypes, encodeTable } from "../../scripts/lib/confusables.mjs";

const data = createRequire(import.meta.url)("unhomoglyph/data.json") as Record<string, string>;

describe("the confusables table", () => {
  it("is current with unhomoglyph (else: node scripts/confusables-table.mjs)", () => {
    expect(CONFUSABLE_PROTOTYPES === encodeTable(asciiPrototypes(data)), "regenerate with node scripts/confusables-table.mjs").toBe(true);
  });

  it("keeps the look-alikes an attacker uses and leaves ASCII and CJK alone", () => {
    const entries = new Map(asciiPrototypes(data));
    expect(entries.get(0x043e)).toBe("o"); // Cyrillic о
    expect(entries.get(0x03bf)).toBe("o"); // Greek ο
    expect(entries.get(0x03b7)).toBe("n"); // Greek η, its mark dropped
    expect(entries.has("m".codePointAt(0)!)).toBe(false);
    expect(entries.has("ノ".codePointAt(0)!)).toBe(false);
  });
});
