import { describe, expect, it } from "vitest";
import { asciiWords, cjkBigrams, jaccard, overlap } from "../../../src/council/overlap";
import { canonicalJson, proposalHash } from "../../../src/council/hash";
import { sha256HexSync } from "../../../src/council/sha256";
import { sha256Hex } from "../../../src/lib/crypto";
import { checkQuality } from "../../../src/council/quality";

describe("principle overlap", () => {
  it("is token Jaccard over ASCII words", () => {
    expect(overlap("Open source every council tool", "open source every council tool")).toBe(1);
    // {publish, all, records} vs {publish, records, weekly}: 2 / 4
    expect(overlap("publish all records", "Publish records weekly")).toBe(0.5);
    expect(overlap("alpha beta", "gamma delta")).toBe(0);
  });

  it("uses character bigrams for CJK text and takes the larger of the two measures", () => {
    expect([...cjkBigrams("評議会の記録")].sort()).toEqual(["の記", "会の", "記録", "評議", "議会"].sort());
    // 評議会の記録を公開 vs 評議会の記録は公開: shared 評議 議会 会の の記 記録 公開 of 10 distinct
    expect(overlap("評議会の記録を公開", "評議会の記録は公開")).toBeCloseTo(6 / 10, 10);
    expect(overlap("council 評議会", "council 理事会")).toBe(1);
    expect(overlap("", "")).toBe(0);
    expect(jaccard(asciiWords(""), asciiWords("x"))).toBe(0);
  });
});

describe("hashing", () => {
  it("computes SHA-256 synchronously exactly as WebCrypto does", async () => {
    for (const text of ["", "abc", "評議会 🗳️", "x".repeat(55), "y".repeat(56), "z".repeat(64), "w".repeat(1000)]) {
      expect(sha256HexSync(text)).toBe(await sha256Hex(text));
    }
  });

  it("hashes the proposal as canonical JSON, so key order does not matter but amendments do", () => {
    expect(canonicalJson({ b: 1, a: [{ d: 2, c: 3 }] })).toBe('{"a":[{"c":3,"d":2}],"b":1}');
    const base = { title: "T", body: "B", amendments: [] };
    const amended = { ...base, amendments: [{ type: "add", target: "scope", content: "docs too" }] };
    expect(proposalHash(base)).toMatch(/^[0-9a-f]{64}$/);
    expect(proposalHash(base)).not.toBe(proposalHash(amended));
  });
});

describe("content quality", () => {
  it("accepts a substantive proposal in English or Japanese", () => {
    expect(
      checkQuality({
        title: "Publish council records weekly",
        body: "Every week the council publishes a digest of all sessions, votes and principles so that nodes outside the council can follow along and object in time.",
      }),
    ).toEqual([]);
    expect(
      checkQuality({
        title: "評議会の記録を毎週公開する",
        body: "評議会は毎週、すべてのセッション、投票、原則の要約を公開します。評議会の外にいるノードも議論を追い、期限内に異議を申し立てられるようにするためです。公開は自動で行います。",
      }),
    ).toEqual([]);
  });

  it("names each problem of an empty, repetitive or title-only proposal", () => {
    expect(checkQuality({ title: "short", body: "too short" })).toEqual([
      { path: "title", message: "must be at least 8 characters" },
      { path: "body", message: "must be at least 80 characters" },
      { path: "body", message: "must have at least 12 words" },
      { path: "body", message: "must use at least 8 different words" },
      { path: "body", message: "is mostly one repeated character" },
    ]);
    expect(checkQuality({ title: "The same words here", body: "The same words here" }).map((e) => e.message)).toContain(
      "must say more than the title",
    );
    const filler = checkQuality({ title: "A filler proposal", body: "a ".repeat(60) + "b c d e f g h i j k l" });
    expect(filler.map((e) => e.message)).toContain("is mostly one repeated character");
  });
});
