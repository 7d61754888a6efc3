import { Octokit } from "@octokit/core";
import { createInstallationAuth } from "./app-auth";
import { AppError } from "../../lib/errors";
import { toPkcs8Pem } from "./private-key";
import { Redactor } from "./redact";
import { GITHUB_API, scopeViolation, type ForgeScope } from "./scope";

/** A GitHub App's credentials for one installation (the organisation's). */
export interface GithubAppCredentials {
  appId: string;
  /** PKCS#1 (as GitHub issues it) or PKCS#8 PEM; see ./private-key.ts. */
  privateKey: string;
  installationId: number;
}

export interface GithubClientOptions {
  org: string;
  credentials: GithubAppCredentials;
  /** The fetch every request goes through (tests inject the GitHub stand-in here). */
  fetch?: typeof fetch;
  /** Where Octokit's warnings and errors go, already redacted; console by default. */
  log?: Pick<Console, "warn" | "error">;
  /** How long one GitHub request may take before it is abandoned (default 20 s). */
  requestTimeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 20_000;

// The runtime's fetch, always called as a plain global (workerd refuses a fetch invoked with
// another `this`).
const platformFetch: typeof fetch = (input, init) => fetch(input, init);

export interface GithubClient {
  octokit: Octokit;
  scope: ForgeScope;
  redactor: Redactor;
}

const refused = (why: string) => new AppError("forge_scope", `Refused a GitHub call outside the organisation: ${why}`);

function headerValue(headers: HeadersInit | undefined, name: string): string | undefined {
  if (!headers) return undefined;
  return new Headers(headers).get(name) ?? undefined;
}

const ACCESS_TOKENS = /^\/app\/installations\/[^/]+\/access_tokens$/;

/**
 * The fetch boundary: every request is checked against the scope before it leaves (a backstop
 * for anything that bypasses the Octokit hook), and every credential that passes through, the app
 * JWT and installation token sent, the installation token received, is noted for redaction.
 */
export function guardedFetch(scope: ForgeScope, redactor: Redactor, base: typeof fetch, timeoutMs = DEFAULT_TIMEOUT_MS): typeof fetch {
  return async function forgeFetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
    const url = input instanceof Request ? input.url : String(input);
    const method = init?.method ?? (input instanceof Request ? input.method : "GET");
    const violation = scopeViolation(scope, { method, url, body: init?.body });
    if (violation) throw refused(violation);
    redactor.addAuthorization(headerValue(init?.headers, "authorization"));
    // fetch has no deadline of its own: a GitHub that never answers would hold the Worker (or the
    // queue consumer, or the Durable Object) until the platform gives up.
    const response = await base(input, { ...init, signal: init?.signal ?? AbortSignal.timeout(timeoutMs) });
    if (response.ok && ACCESS_TOKENS.test(new URL(url).pathname)) {
      const token = await response
        .clone()
        .json()
        .then((data) => (data as { token?: unknown }).token)
        .catch(() => undefined);
      if (typeof token === "string") redactor.add(token);
    }
    return response;
  };
}

/**
 * An Octokit (core only: the forge calls a handful of routes by name, so the REST method plugins
 * would add bundle size for nothing) authenticated as the App's installation (./app-auth.ts,
 * WebCrypto under workerd), confined to the organisation and logging only redacted text.
 */
export function createGithubClient(options: GithubClientOptions): GithubClient {
  const { org, credentials } = options;
  const scope: ForgeScope = { org, installationId: credentials.installationId };
  const redactor = new Redactor();
  redactor.add(credentials.privateKey);
  const privateKey = toPkcs8Pem(credentials.privateKey);
  redactor.add(privateKey);

  const sink = options.log ?? console;
  const log = {
    debug: () => {},
    info: () => {},
    warn: (message: string) => sink.warn(`forge: ${redactor.redact(String(message))}`),
    error: (message: string) => sink.error(`forge: ${redactor.redact(String(message))}`),
  };

  const octokit = new Octokit({
    baseUrl: GITHUB_API,
    userAgent: "crewplane-forge",
    authStrategy: createInstallationAuth,
    auth: { appId: credentials.appId, privateKey, installationId: credentials.installationId },
    // `log` here too: @octokit/request logs deprecation notices (with URLs and GitHub's links) to
    // `request.log`, falling back to console, not to the Octokit's own log.
    request: { fetch: guardedFetch(scope, redactor, options.fetch ?? platformFetch, options.requestTimeoutMs), log },
    log,
  });

  // Registered after the auth strategy's hook, so it runs first: a refused call is stopped before
  // an installation token is even minted for it.
  octokit.hook.before("request", (endpointOptions) => {
    const { method, url, body } = octokit.request.endpoint.parse(endpointOptions);
    const violation = scopeViolation(scope, { method, url, body });
    if (violation) throw refused(violation);
  });

  return { octokit, scope, redactor };
}
