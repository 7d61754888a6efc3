/**
 * The forge's scope (seed 004 "GitHub スコープ: 統合トークンは組織に限定"): the integration token may only
 * touch the configured organisation. This is the pure decision; ./octokit.ts applies it twice, before
 * Octokit authenticates a request and again at the fetch boundary, so a refused request is never sent.
 */

export const GITHUB_API = "https://api.github.com";

export interface ForgeScope {
  /** The organisation's login (GitHub logins are case-insensitive). */
  org: string;
  /** The GitHub App installation whose token may be minted. */
  installationId: number;
}

export interface OutgoingRequest {
  method: string;
  url: string;
  /** The serialised request body, when there is one. */
  body?: unknown;
}

// Body fields that name an owner on GitHub's REST API (transfer, fork, template generation,
// cross-repository pull requests `head: "owner:branch"`).
const OWNER_FIELDS = ["owner", "new_owner", "organization", "org"] as const;
const OWNER_PREFIXED_FIELDS = ["head", "head_repo"] as const;

const sameLogin = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

function decodedSegments(pathname: string): string[] | null {
  try {
    return pathname.split("/").slice(1).map(decodeURIComponent);
  } catch {
    return null;
  }
}

function pathViolation(scope: ForgeScope, method: string, pathname: string): string | null {
  const segments = decodedSegments(pathname);
  if (!segments) return "the path is not valid percent-encoding";
  if (segments.some((s) => s === "." || s === "..")) return "the path has a dot segment";
  const [head, owner, third, fourth, fifth] = segments;
  if (head === "repos" || head === "orgs") {
    if (!owner || !sameLogin(owner, scope.org)) return `owner '${owner ?? ""}' is not the organisation '${scope.org}'`;
    if (head === "repos" && (!third || third.includes("/"))) return "the repository name is missing or has a slash";
    return null;
  }
  if (head === "app" && owner === "installations" && fourth === "access_tokens" && fifth === undefined && method === "POST") {
    return third === String(scope.installationId) ? null : `installation '${third ?? ""}' is not the configured installation`;
  }
  return `'${method} /${segments.join("/")}' is outside /repos/${scope.org} and /orgs/${scope.org}`;
}

function bodyViolation(scope: ForgeScope, body: unknown): string | null {
  let parsed: unknown = body;
  if (typeof body === "string") {
    try {
      parsed = JSON.parse(body);
    } catch {
      return null; // not JSON: no owner field to read
    }
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return null;
  const fields = parsed as Record<string, unknown>;
  for (const name of OWNER_FIELDS) {
    const value = fields[name];
    if (typeof value === "string" && !sameLogin(value, scope.org)) return `body field '${name}' names owner '${value}'`;
  }
  for (const name of OWNER_PREFIXED_FIELDS) {
    const value = fields[name];
    if (typeof value !== "string") continue;
    const colon = value.indexOf(":");
    if (colon >= 0 && !sameLogin(value.slice(0, colon), scope.org)) return `body field '${name}' names owner '${value.slice(0, colon)}'`;
    if (value.includes("/") && name === "head_repo" && !sameLogin(value.split("/")[0]!, scope.org)) {
      return `body field '${name}' names owner '${value.split("/")[0]}'`;
    }
  }
  return null;
}

/** Why a request would leave the organisation, or null when it stays inside. */
export function scopeViolation(scope: ForgeScope, req: OutgoingRequest): string | null {
  let url: URL;
  try {
    url = new URL(req.url);
  } catch {
    return "the URL does not parse";
  }
  if (url.origin !== GITHUB_API || url.username || url.password) return `host '${url.host}' is not ${new URL(GITHUB_API).host}`;
  const method = req.method.toUpperCase();
  return pathViolation(scope, method, url.pathname) ?? bodyViolation(scope, req.body);
}
