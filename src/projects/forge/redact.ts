import { AppError } from "../../lib/errors";

/**
 * Keeps credentials out of everything the forge says. Octokit's errors carry the request (headers,
 * URL, body) and the response; its log lines carry URLs; GitHub error bodies may echo input. None
 * of that is passed on: errors become an AppError with a fixed-form detail, and whatever text is
 * kept (the internal message, log lines) goes through `redact` first, which removes both the
 * secrets this client has seen (the private key, every token it sent or was given) and anything
 * shaped like a credential.
 */
export class Redactor {
  readonly #secrets = new Set<string>();

  /** Remembers a secret (and, for a PEM key, each body line) so `redact` removes it verbatim. */
  add(secret: string | undefined | null): void {
    if (!secret || secret.length < 8) return;
    this.#secrets.add(secret);
    for (const line of secret.split(/\\n|\r?\n/)) if (line.length >= 16 && !line.startsWith("-----")) this.#secrets.add(line.trim());
  }

  /** Notes the credential of an Authorization header value (`bearer <jwt>`, `token <token>`). */
  addAuthorization(value: string | null | undefined): void {
    const credential = value?.replace(/^\s*\S+\s+/, "");
    if (credential && credential !== value) this.add(credential);
  }

  redact(text: string): string {
    let out = text;
    // Longest first, so a secret that contains another is removed whole.
    for (const secret of [...this.#secrets].sort((a, b) => b.length - a.length)) out = out.split(secret).join("[REDACTED]");
    return redactShapes(out);
  }
}

/** Credential-shaped text, whoever's it is. */
export function redactShapes(text: string): string {
  return text
    .replace(/-----BEGIN [A-Z0-9 ]+-----[\s\S]*?(-----END [A-Z0-9 ]+-----|$)/g, "[REDACTED KEY]")
    .replace(/\b(gh[opsur]_[A-Za-z0-9_]{8,}|github_pat_[A-Za-z0-9_]{8,})/g, "[REDACTED]")
    .replace(/\beyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*/g, "[REDACTED]")
    .replace(/\b(bearer|token|basic)(\s+)[A-Za-z0-9._~+/=-]{8,}/gi, "$1$2[REDACTED]")
    .replace(/([?&](?:access_token|client_secret|token|jwt|key)=)[^&\s"']+/gi, "$1[REDACTED]");
}

interface RequestErrorLike {
  status: number;
  message?: unknown;
  cause?: unknown;
  response?: { data?: unknown };
}

function isRequestError(err: unknown): err is RequestErrorLike {
  return typeof err === "object" && err !== null && typeof (err as { status?: unknown }).status === "number";
}

/** GitHub's `message` of an error response, when it has one (redacted and capped). */
export function githubMessage(err: unknown, redactor: Redactor): string | undefined {
  if (!isRequestError(err)) return undefined;
  const data = err.response?.data;
  const raw =
    typeof data === "object" && data !== null && typeof (data as { message?: unknown }).message === "string"
      ? (data as { message: string }).message
      : typeof err.message === "string"
        ? err.message
        : undefined;
  return raw === undefined ? undefined : redactor.redact(raw).slice(0, 300);
}

/** The HTTP status GitHub answered, or undefined when no answer came (network, refusal, bug). */
export function githubStatus(err: unknown): number | undefined {
  if (!isRequestError(err) || err.response === undefined) return undefined;
  return err.status;
}

/**
 * Any failure of a GitHub call → an AppError safe to show, log and store. An AppError raised on
 * the way (a scope refusal inside fetch, which Octokit wraps) comes back as itself. No `cause` is
 * kept: the root error handler logs causes, and Octokit's error holds the request.
 */
export function forgeError(err: unknown, what: string, redactor: Redactor): AppError {
  if (err instanceof AppError) return err;
  if (isRequestError(err) && err.cause instanceof AppError) return err.cause;
  const status = githubStatus(err);
  const message = githubMessage(err, redactor);
  if (status === undefined) {
    return new AppError("forge_failed", `GitHub could not be reached for ${what}`, {
      internalMessage: message ?? (err instanceof Error ? redactor.redact(err.message) : "unknown failure"),
    });
  }
  return new AppError("forge_failed", `GitHub answered ${status} to ${what}`, {
    extra: { github_status: status },
    internalMessage: message,
  });
}
