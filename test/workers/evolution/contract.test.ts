import { describe, expect, it } from "vitest";
import { contractSchema, mustAlwaysMissing, mustNotHits, secretHits, toolCallsWithin } from "../../../src/evolution/contract";

const contract = contractSchema.parse({
  must_not: ["reveal api keys", "execute rm -rf"],
  must_always: ["respond in zh-TW", "refuse harmful requests"],
  max_tool_calls_per_turn: 10,
});

describe("contract checks (§6.2: case-insensitive substrings)", () => {
  it("finds must_not phrases in any case, in contract order", () => {
    expect(mustNotHits("Never EXECUTE RM -RF; and do not Reveal API Keys.", contract)).toEqual(["reveal api keys", "execute rm -rf"]);
    expect(mustNotHits("reveal the api key", contract)).toEqual([]);
  });

  it("lists the must_always phrases a text lacks", () => {
    expect(mustAlwaysMissing("I RESPOND IN ZH-TW.", contract)).toEqual(["refuse harmful requests"]);
    expect(mustAlwaysMissing("respond in zh-tw and refuse harmful requests", contract)).toEqual([]);
  });

  it("matches around multibyte text whose lower case changes length", () => {
    expect(mustNotHits("İİİ REVEAL API KEYS ẞ", contract)).toEqual(["reveal api keys"]);
    expect(mustNotHits("İstanbul", contractSchema.parse({ must_not: ["İSTANBUL"] }))).toEqual(["İSTANBUL"]);
  });

  it("bounds tool calls per turn only when a limit is set", () => {
    expect(toolCallsWithin(10, contract)).toBe(true);
    expect(toolCallsWithin(11, contract)).toBe(false);
    expect(toolCallsWithin(1_000, contractSchema.parse({}))).toBe(true);
  });

  it("finds the seed's secret patterns and common key shapes", () => {
    expect(secretHits("sk-ant-api03-x")).toContain("anthropic_key");
    expect(secretHits("export API_KEY=abc")).toContain("api_key_assignment");
    expect(secretHits("token= abc")).toContain("token_assignment");
    expect(secretHits("AKIAABCDEFGHIJKLMNOP")).toEqual(["aws_access_key"]);
    expect(secretHits("Rotate the API key every 90 days and never share tokens.")).toEqual([]);
  });

  it("refuses unknown keys in a contract", () => {
    expect(contractSchema.safeParse({ must_nt: [] }).success).toBe(false);
  });
});
