import type { Octokit } from "@octokit/core";
import githubAppJwt from "universal-github-app-jwt";

/**
 * Octokit's `authStrategy` for one GitHub App installation, the only way the forge authenticates:
 * the App's JWT for `/app/…` routes (minting an installation token), the installation token for
 * everything else. It replaces `@octokit/auth-app`, which also carries the OAuth user, device and
 * web flows the forge never uses: about 40 KB of the Worker bundle for a JWT and one token exchange
 * (issue 41's bundle budget).
 *
 * The token is cached until a minute before GitHub's `expires_at`, and concurrent requests share one
 * exchange. Both clocks here are the real one, never the test clock: the JWT's `iat`/`exp` and the
 * token's expiry are checked by GitHub against real time.
 */
type Request = Octokit["request"];
type Endpoint = ReturnType<Request["endpoint"]["merge"]>;

export interface AppAuthOptions {
  request: Request;
  appId: string;
  /** PKCS#8 PEM (./private-key.ts converts GitHub's PKCS#1 before this). */
  privateKey: string;
  installationId: number;
}

export interface InstallationAuthentication {
  type: "token";
  tokenType: "installation";
  token: string;
  expiresAt: string;
}

/** Routes that take the App's JWT rather than an installation token. */
const APP_ROUTE = /^(?:https:\/\/[^/]+)?\/app(?:\/|$)/;
/** Renew a token this long before GitHub says it expires, so no request carries one that lapses in flight. */
const RENEW_BEFORE_MS = 60_000;

export function createInstallationAuth(options: AppAuthOptions) {
  let cached: InstallationAuthentication | null = null;
  let minting: Promise<InstallationAuthentication> | null = null;

  const appJwt = async () => (await githubAppJwt({ id: options.appId, privateKey: options.privateKey })).token;

  async function mint(request: Request): Promise<InstallationAuthentication> {
    const { data } = await request("POST /app/installations/{installation_id}/access_tokens", {
      installation_id: options.installationId,
      headers: { authorization: `bearer ${await appJwt()}` },
    });
    return { type: "token", tokenType: "installation", token: data.token, expiresAt: data.expires_at };
  }

  function installationToken(request: Request): Promise<InstallationAuthentication> {
    if (cached && Date.parse(cached.expiresAt) - RENEW_BEFORE_MS > Date.now()) return Promise.resolve(cached);
    minting ??= mint(request)
      .then((auth) => (cached = auth))
      .finally(() => (minting = null));
    return minting;
  }

  async function auth(): Promise<InstallationAuthentication> {
    return installationToken(options.request);
  }

  /** Octokit wraps every request in this hook: the request it is given is the one beneath the hook. */
  async function hook(request: Request, route: Parameters<Request>[0] | Endpoint, parameters?: Parameters<Request>[1]) {
    const endpoint = request.endpoint.merge(route as string, parameters);
    const appRoute = APP_ROUTE.test(endpoint.url ?? "");
    endpoint.headers.authorization = appRoute ? `bearer ${await appJwt()}` : `token ${(await installationToken(request)).token}`;
    return request(endpoint as unknown as Parameters<Request>[0]);
  }

  return Object.assign(auth, { hook });
}
