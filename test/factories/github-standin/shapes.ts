import contract from "virtual:github-contract";
import { ContractChecker } from "./checker";
import type { ImplementedOperation } from "./contract";

/** The one checker for the stand-in (building validators is the slow part; they are cached). */
export const checker = new ContractChecker(contract);
export const contractSource = contract.source;

type Json = unknown;

const isPlain = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** `base` with `overlay` laid over it: objects merge, anything else replaces, `undefined` deletes. */
export function merge(base: Json, overlay: Json): Json {
  if (!isPlain(base) || !isPlain(overlay)) return overlay;
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(overlay)) {
    if (value === undefined) delete out[key];
    else out[key] = merge(out[key], value);
  }
  return out;
}

/**
 * An answer in GitHub's documented shape: the description's own example for the operation and
 * status (the first item, for a list), renamed from octocat/Hello-World to `fullName`, with the
 * stand-in's state laid over it.
 */
export function documented(key: ImplementedOperation, status: number, overlay: Record<string, unknown>, fullName?: string): Json {
  const op = checker.operation(key);
  let example = structuredClone(op.responses?.[String(status)]?.example ?? {});
  if (Array.isArray(example)) example = example[0] ?? {};
  if (fullName) {
    const [owner, name] = fullName.split("/") as [string, string];
    example = JSON.parse(
      JSON.stringify(example)
        .replaceAll("octocat/Hello-World", fullName)
        .replaceAll('"Hello-World"', JSON.stringify(name))
        .replaceAll('"octocat"', JSON.stringify(owner)),
    );
  }
  return merge(example, overlay);
}

/** What a handler answers: a status and a JSON body. */
export interface Answer {
  status: number;
  body: unknown;
}

const DOCS = "https://docs.github.com/rest";

/** An error in GitHub's shape (`basic-error`, or `validation-error` with `errors`). */
export function githubError(status: number, message: string, errors?: unknown[]): Answer {
  return { status, body: { message, documentation_url: DOCS, ...(errors ? { errors } : {}), status: String(status) } };
}
