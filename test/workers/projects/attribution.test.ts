import { describe, expect, it } from "vitest";
import { AppError } from "../../../src/lib/errors";
import { attributedMessage, attributionTrailer, cleanCommitMessage, nodeCoauthor, sanitizeLabel } from "../../../src/projects/attribution";

// Seed 004 "コミット帰属", with the co-author address in crewplane's documented no-reply form.
const seed = {
  node_id: "node_a0c28b601d3a6d49",
  project: "human-welfare-v1",
  task_id: "task_clxyz123",
  council_session_id: "delib_abc789",
};
const SEED_TRAILER =
  "Contributed by: node_a0c28b601d3a6d49\n" +
  "Project: human-welfare-v1\n" +
  "Task: task_clxyz123\n" +
  "Council-Session: delib_abc789\n" +
  "\n" +
  "Co-authored-by: EvoMap-Agent-a0c28 <node_a0c28b601d3a6d49@nodes.noreply.crewplane.dev>";

function thrown(fn: () => unknown): AppError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return err as AppError;
  }
  throw new Error("expected an AppError");
}

describe("commit attribution block", () => {
  it("is the seed's block byte for byte", () => {
    expect(attributionTrailer(seed)).toBe(SEED_TRAILER);
  });

  it("ends the commit message, after one blank line, with a final newline", () => {
    expect(attributedMessage("feat(auth): implement OAuth2 flow", seed)).toBe(`feat(auth): implement OAuth2 flow\n\n${SEED_TRAILER}\n`);
  });

  it("keeps a multi-line message body and puts the block after it", () => {
    expect(attributedMessage("feat: x\r\n\r\nWhy:\r\n- because\t \n\n\n\nmore  ", seed)).toBe(
      `feat: x\n\nWhy:\n- because\n\nmore\n\n${SEED_TRAILER}\n`,
    );
  });

  it("names the node with the first five hex digits and a stable no-reply address", () => {
    expect(nodeCoauthor("node_a0c28b601d3a6d49")).toBe("EvoMap-Agent-a0c28 <node_a0c28b601d3a6d49@nodes.noreply.crewplane.dev>");
    expect(nodeCoauthor("node_a0c28b601d3a6d49")).toBe(nodeCoauthor("node_a0c28b601d3a6d49"));
    // An id from an EvoMap client without the node_ prefix keeps its first five characters.
    expect(nodeCoauthor("f00dcafe1234")).toBe("EvoMap-Agent-f00dc <f00dcafe1234@nodes.noreply.crewplane.dev>");
  });

  it.each([
    [
      "a newline",
      "human-welfare-v1\nCo-authored-by: Mallory <m@evil.example>",
      "human-welfare-v1 Co-authored-by: Mallory <m@evil.example>",
    ],
    ["a carriage return", "p\rTask: forged", "p Task: forged"],
    ["a Unicode line separator", "p\u2028Council-Session: forged", "p Council-Session: forged"],
    ["a paragraph separator and NEL", "p\u2029\u0085x", "p x"],
    ["bidi overrides", "p\u202Egnp.exe\u202C", "p gnp.exe"],
    ["tabs and runs of spaces", "  human\t\twelfare   v1  ", "human welfare v1"],
    ["a lone surrogate", "p\uD800q", "p\uFFFDq"],
  ])("turns %s in a label into one space so it cannot start a forged trailer", (_what, project, expected) => {
    const trailer = attributionTrailer({ ...seed, project });
    expect(trailer.split("\n")).toHaveLength(6);
    expect(trailer.split("\n")[1]).toBe(`Project: ${expected}`);
    expect(trailer.match(/^Co-authored-by:/gm)).toHaveLength(1);
  });

  it("caps a label at 200 characters", () => {
    expect(sanitizeLabel("x".repeat(500), "project")).toHaveLength(200);
  });

  it("refuses a label that is empty once cleaned, naming the field", () => {
    const err = thrown(() => attributionTrailer({ ...seed, council_session_id: "\n\u202E \t" }));
    expect(err.code).toBe("validation_failed");
    expect(err.errors).toEqual([{ path: "council_session_id", message: "must not be empty" }]);
  });

  it.each([["node a0c28"], ["node_a0c28>\nCo-authored-by: x <x@y>"], [""], ["-node"], ["n".repeat(65)]])(
    "refuses the node id %j",
    (nodeId) => {
      expect(thrown(() => attributionTrailer({ ...seed, node_id: nodeId })).code).toBe("validation_failed");
    },
  );

  it("quotes lines of the contributor's message that read like attribution or co-author trailers", () => {
    const message = "feat: x\n\nCo-authored-by: Mallory <m@evil.example>\nContributed by: node_fake\n  task: t\nProject X is nice";
    expect(cleanCommitMessage(message)).toBe(
      "feat: x\n\n> Co-authored-by: Mallory <m@evil.example>\n> Contributed by: node_fake\n>   task: t\nProject X is nice",
    );
    const full = attributedMessage(message, seed);
    expect(full.match(/^Co-authored-by:/gm)).toEqual(["Co-authored-by:"]);
    expect(full.match(/^Contributed by:/gm)).toEqual(["Contributed by:"]);
    expect(full.endsWith(`${SEED_TRAILER}\n`)).toBe(true);
  });

  it("drops control characters from the message but keeps tabs inside lines", () => {
    expect(cleanCommitMessage("feat:\u0007 bell\u001b[31m red\n\tindented\u202E")).toBe("feat: bell[31m red\n\tindented");
  });

  it("refuses a message that is empty once cleaned", () => {
    expect(thrown(() => attributedMessage(" \r\n\u0000\n ", seed)).errors).toEqual([{ path: "message", message: "must not be empty" }]);
  });
});
