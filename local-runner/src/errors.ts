/**
 * Typed errors thrown by commands; `main.ts` maps them to exit codes in one place.
 */

export const EXIT_CODES = {
  ok: 0,
  unexpected: 1,
  usage: 2,
  unauthorized: 3,
} as const;

/** Bad command line or configuration: the user must change how the runner is started. */
export class UsageError extends Error {
  readonly exitCode = EXIT_CODES.usage;
  override name = "UsageError";
}

/** The Worker rejected the runner token (401/403); retrying cannot help. */
export class UnauthorizedError extends Error {
  readonly exitCode = EXIT_CODES.unauthorized;
  override name = "UnauthorizedError";
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

export function exitCodeFor(err: unknown): number {
  if (err instanceof UsageError || err instanceof UnauthorizedError) return err.exitCode;
  return EXIT_CODES.unexpected;
}
