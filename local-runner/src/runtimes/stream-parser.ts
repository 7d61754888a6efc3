/**
 * The skeleton every CLI's stream parser shares (issue 20): the CLI writes one JSON object per line
 * (anything else, such as warnings or a half line cut by a kill, is skipped), each is handed to the
 * runtime's own reading, and the runtime says when its final event came and what the stream meant.
 */
import { parseJsonObject, type Json } from "./json-lines.ts";
import type { StreamEvidence, StreamOutcome, StreamParser } from "./types.ts";

export interface StreamReading {
  onEvent(event: Json): void;
  /** True once the final event has been seen. */
  done(): boolean;
  finish(): StreamOutcome;
  evidence(): StreamEvidence;
}

export function jsonLinesParser(reading: StreamReading): StreamParser {
  return {
    get done() {
      return reading.done();
    },
    push(line) {
      const event = parseJsonObject(line);
      if (event) reading.onEvent(event);
    },
    finish: () => reading.finish(),
    evidence: () => reading.evidence(),
  };
}

/** A whole recorded stream at once. */
export function parseLines(createParser: () => StreamParser, lines: Iterable<string>): StreamOutcome {
  const parser = createParser();
  for (const line of lines) parser.push(line);
  return parser.finish();
}
