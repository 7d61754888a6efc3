/**
 * Job sizes, in UTF-8 bytes, well below the platform's limits: a Queue message is at most 128 KB
 * including metadata (the prompt travels in the dispatch message), and a D1 or Durable Object row
 * at most 2 MB (the result is stored in both, and in the inbox's outbox on the way).
 */
export const JOB_LIMITS = {
  /** A prompt's JSON encoding (what the dispatch message carries), without its quotes. */
  promptBytes: 64 * 1024,
  /** A result's JSON encoding. */
  resultBytes: 512 * 1024,
  /** Nesting of objects and arrays in a result. Deeper values break structured cloning over RPC. */
  resultDepth: 64,
} as const;

const encoder = new TextEncoder();

export function utf8Bytes(text: string): number {
  return encoder.encode(text).byteLength;
}

/** Bytes a string occupies inside a JSON document (escapes included, quotes not). */
export function jsonStringBytes(text: string): number {
  return utf8Bytes(JSON.stringify(text)) - 2;
}

/**
 * Nesting depth of a parsed JSON value, walked with an explicit stack (a recursive walk is what
 * overflows on hostile input), giving up as soon as it passes `limit`: returns `limit + 1` then.
 */
export function jsonDepth(value: unknown, limit: number): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== "object") continue;
    if (depth > limit) return limit + 1;
    if (depth > deepest) deepest = depth;
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (child !== null && typeof child === "object") stack.push([child, depth + 1]);
    }
  }
  return deepest;
}

export type ResultCheck = { ok: true; bytes: number } | { ok: false; limit: "result_depth" | "result_bytes"; detail: string };

/** Whether a runner's result fits; the depth is checked first so the size is never measured on a deep value. */
export function checkResult(result: unknown): ResultCheck {
  if (jsonDepth(result, JOB_LIMITS.resultDepth) > JOB_LIMITS.resultDepth) {
    return {
      ok: false,
      limit: "result_depth",
      detail: `The result nests deeper than ${JOB_LIMITS.resultDepth} levels of objects and arrays`,
    };
  }
  const bytes = utf8Bytes(JSON.stringify(result));
  if (bytes > JOB_LIMITS.resultBytes) {
    return {
      ok: false,
      limit: "result_bytes",
      detail: `The result is ${bytes} bytes of JSON; the limit is ${JOB_LIMITS.resultBytes} bytes (512 KiB)`,
    };
  }
  return { ok: true, bytes };
}
