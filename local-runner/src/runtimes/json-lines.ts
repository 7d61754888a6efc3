/** Small helpers the stream parsers share: tolerant line parsing and bounded messages. */
import type { Usage } from "../protocol.ts";

export type Json = Record<string, unknown>;

const MESSAGE_LIMIT = 2000;

/** One JSON object per line; anything else (warnings, half lines, arrays) is skipped. */
export function parseJsonObject(line: string): Json | undefined {
  const trimmed = line.trim();
  if (!trimmed.startsWith("{")) return undefined;
  try {
    const value: unknown = JSON.parse(trimmed);
    return isObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

export function isObject(value: unknown): value is Json {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

export function str(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

export function count(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : undefined;
}

export function clip(text: string, limit = MESSAGE_LIMIT): string {
  return text.length > limit ? `${text.slice(0, limit)}…` : text;
}

/** A usage object with only the counters that were reported; undefined when none was. */
export function usageOf(fields: Partial<Record<keyof Usage, unknown>>): Usage | undefined {
  const usage: Usage = {};
  for (const [key, value] of Object.entries(fields) as Array<[keyof Usage, unknown]>) {
    const n = count(value);
    if (n !== undefined) usage[key] = n;
  }
  return Object.keys(usage).length > 0 ? usage : undefined;
}

/** Tool output as text: strings stay, structured content is serialized. */
export function textOf(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === "string") return value;
  if (Array.isArray(value)) {
    // MCP / Anthropic content blocks: keep their text parts.
    const texts = value.map((block) => (isObject(block) && typeof block.text === "string" ? block.text : undefined));
    if (texts.every((t) => t !== undefined)) return texts.join("\n");
  }
  return JSON.stringify(value);
}
