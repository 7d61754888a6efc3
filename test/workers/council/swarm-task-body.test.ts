import { describe, expect, it } from "vitest";
import type { Amendment } from "../../../src/council/session";
import { swarmTaskBody } from "../../../src/council/synthesis";
import { nodeId, sessionState } from "../../factories/council";

const amendment = (over: Partial<Amendment>): Amendment => ({
  amendment_id: `amend_${over.target}`,
  by: nodeId(1),
  type: "add",
  target: "scope",
  content: "Include dissenting opinions.",
  created_at: "2026-11-30T00:00:00.000Z",
  support: [nodeId(2)],
  objections: [],
  status: "accepted",
  ...over,
});

describe("a general proposal's swarm task body", () => {
  it("carries the proposal as voted on: its accepted amendments, in order, then the consensus; rejected ones stay out", () => {
    const state = sessionState({
      amendments: [
        amendment({ target: "scope" }),
        amendment({ type: "remove", target: "weekly", content: "Publish monthly instead.", status: "rejected" }),
        amendment({ type: "replace", target: "format", content: "One page at most." }),
      ],
    });
    expect(swarmTaskBody(state, "Approved with redaction.")).toBe(
      [
        "Every week the council publishes a digest of all sessions.",
        "",
        "Accepted amendments:",
        "1. add scope: Include dissenting opinions.",
        "2. replace format: One page at most.",
        "",
        "---",
        "Council consensus (session delib_0000000000000001):",
        "Approved with redaction.",
      ].join("\n"),
    );
  });

  it("is the proposal and the consensus alone when no amendment was accepted", () => {
    expect(swarmTaskBody(sessionState(), "Approved.")).toBe(
      "Every week the council publishes a digest of all sessions.\n\n---\nCouncil consensus (session delib_0000000000000001):\nApproved.",
    );
  });
});
