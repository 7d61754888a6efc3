import { describe, expect, it } from "vitest";
import { parseVerifierReply } from "../../../src/eval/verifier-reply";

describe("parseVerifierReply", () => {
  it("reads the structured verdict, bare or fenced", () => {
    expect(parseVerifierReply('{"verdict":"PASS","reasons":["all criteria met"]}')).toBe("PASS");
    expect(parseVerifierReply('```json\n{"verdict": "FAIL", "reasons": []}\n```')).toBe("FAIL");
  });

  it("does not let a FAIL inside the reasons flip a structured PASS", () => {
    expect(parseVerifierReply('{"verdict":"PASS","reasons":["would FAIL if the file were missing"]}')).toBe("PASS");
  });

  it("reads the first non-empty line's verdict token", () => {
    expect(parseVerifierReply("\nPASS\nThe file contains dist/.")).toBe("PASS");
    expect(parseVerifierReply("Verdict: FAIL. node_modules/ was dropped.")).toBe("FAIL");
  });

  it("fails closed when the first line names both", () => {
    expect(parseVerifierReply("PASS or FAIL? FAIL.")).toBe("FAIL");
  });

  it("is unparseable when the first line carries no verdict", () => {
    expect(parseVerifierReply("The work looks complete.\nPASS")).toBe("unparseable");
    expect(parseVerifierReply('{"type":"turn.completed","usage":{"input_tokens":12}}')).toBe("unparseable");
    expect(parseVerifierReply("")).toBe("unparseable");
    expect(parseVerifierReply("PASSED")).toBe("unparseable");
  });
});
