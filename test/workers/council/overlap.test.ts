import { describe, expect, it } from "vitest";
import { principleStatement } from "../../../src/council/effects";
import { cjkBigrams, containment, overlap, vocabulary } from "../../../src/council/overlap";
import { sessionState } from "../../factories/council";

const PROPOSAL_EN = {
  title: "Publish a weekly digest of council records",
  body: "Every week the council publishes a digest of all sessions, ballots and principles, so that nodes outside the council can follow its work and object in time. The digest is generated from the public trail.",
};
const PROPOSAL_JA = {
  title: "評議会の記録を毎週公開する",
  body: "評議会は毎週、すべてのセッション、投票、原則の要約を公開します。評議会の外にいるノードも議論を追い、期限内に異議を申し立てられるようにするためです。公開は自動で行います。",
};
import { canonicalJson, proposalHash } from "../../../src/council/hash";
import { sha256HexSync } from "../../../src/council/sha256";
import { sha256Hex } from "../../../src/lib/crypto";
import { checkQuality } from "../../../src/council/quality";

describe("principle overlap", () => {
  it("is the share of the text's vocabulary that the principle holds, whatever the principle's length", () => {
    expect(overlap("Open source every council tool", "open source every council tool")).toBe(1);
    // {publish, records, archive}: two of three are in the principle
    expect(overlap("publish records archive", "Publish records weekly")).toBeCloseTo(2 / 3, 10);
    expect(overlap("alpha beta", "gamma delta")).toBe(0);
    // a long principle does not dilute a text it fully holds (Jaccard gave 2 / 40 here)
    const long = `Publish records. ${Array.from({ length: 38 }, (_, i) => `topic${i}`).join(" ")}`;
    expect(overlap("publish records", long)).toBe(1);
    // function words are not vocabulary: they neither match nor count
    expect(overlap("the records of the council", "council records")).toBe(1);
    expect(overlap("the a of and", "the a of and")).toBe(0);
    expect(overlap("", "")).toBe(0);
    expect(containment(vocabulary(""), vocabulary("x"))).toBe(0);
  });

  it("uses character bigrams for CJK runs, leaving out those written only in hiragana", () => {
    expect([...cjkBigrams("評議会の記録")].sort()).toEqual(["の記", "会の", "記録", "評議", "議会"].sort());
    expect([...cjkBigrams("してください")]).toEqual([]);
    expect([...cjkBigrams("オンボーディング")]).toContain("ーデ");
    // 評議 議会 会の の記 記録 録を を公 公開: six of eight are in 評議会の記録は公開
    expect(overlap("評議会の記録を公開", "評議会の記録は公開")).toBeCloseTo(6 / 8, 10);
    expect(overlap("council 評議会", "council 理事会")).toBeCloseTo(1 / 3, 10);
  });

  it("scores the proposal that produced a principle high against it, and unrelated text low", () => {
    const consensus = [
      "Decision: approved. Weighted votes: approve 5, reject 0, revise 0 (total 5, 5 ballots).",
      `Proposal: ${PROPOSAL_EN.title}`,
      "Accepted amendments: none.",
      "Conditions: none.",
      `Devil's advocate node_0000000000000001 objected:\n${"- A weekly cadence may be too slow for urgent sessions; ".repeat(12)}`,
    ].join("\n\n");
    const decided = (proposal: { title: string; body: string }) =>
      sessionState({
        proposal,
        phase: "approved",
        decision: {
          outcome: "approved",
          tallied_outcome: "approved",
          confidence: 0.9,
          consensus,
          synthesis_source: "template",
          quality_score: 1,
          conditions: ["redact drafts"],
          ethics: { rules: [], model: { status: "off" } },
          tally: { approve: 5, reject: 0, revise: 0, total: 5, votes: 5 },
          decided_at: new Date(0).toISOString(),
        },
      });
    const en = principleStatement(decided(PROPOSAL_EN));
    expect(en).toContain(PROPOSAL_EN.body);
    expect(en).toContain("redact drafts");
    expect(overlap(`${PROPOSAL_EN.title}\n${PROPOSAL_EN.body}`, en)).toBeGreaterThanOrEqual(0.9);
    expect(overlap(PROPOSAL_EN.body, en)).toBeGreaterThanOrEqual(0.9);
    expect(overlap("Publish a weekly digest of council records for every node", en)).toBeGreaterThanOrEqual(0.8);
    for (const unrelated of [
      "Replace the coffee machine in the office kitchen with a quieter one.",
      "Migrate the build cache to a faster object store and prune artifacts older than a month.",
      "Adopt a code of conduct for the community chat and appoint two moderators.",
    ]) {
      expect(overlap(unrelated, en), unrelated).toBeLessThanOrEqual(0.15);
    }

    const ja = principleStatement(decided(PROPOSAL_JA));
    expect(overlap(`${PROPOSAL_JA.title}\n${PROPOSAL_JA.body}`, ja)).toBeGreaterThanOrEqual(0.9);
    expect(overlap("来週から社内の食堂で新しいメニューを提供します。ご意見をお寄せください。", ja)).toBeLessThanOrEqual(0.15);
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
