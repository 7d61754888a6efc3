import { describe, expect, it } from "vitest";
import { createGithubForge } from "../../../../src/projects/forge/github";
import {
  appKeys,
  APP_ID,
  githubAppKeys,
  GithubStandin,
  INSTALLATION_ID,
  ORG,
  orgStandin,
  OTHER_ORG,
} from "../../../factories/github-standin";
import { checker } from "../../../factories/github-standin/shapes";

/**
 * The stand-in is only worth something if it refuses what GitHub's description does not allow:
 * these requests are sent straight to it (as a buggy client would) and must fail the test.
 */

async function standinWithRepo() {
  const { standin } = await orgStandin();
  const repo = await standin.createRepository(ORG, "demo");
  const { token } = standin.mintToken();
  const send = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    standin.fetch(path.startsWith("http") ? path : `https://api.github.com${path}`, {
      method,
      headers: {
        authorization: `token ${token}`,
        accept: "application/vnd.github+json",
        "user-agent": "test-client",
        ...(body !== undefined ? { "content-type": "application/json; charset=utf-8" } : {}),
        ...headers,
      },
      ...(body !== undefined ? { body: typeof body === "string" ? body : JSON.stringify(body) } : {}),
    });
  return { standin, repo, send, main: repo.refs.get("refs/heads/main")! };
}

describe("GitHub stand-in: requests outside GitHub's OpenAPI description fail the test", () => {
  const R = `/repos/${ORG}/demo`;
  it.each([
    ["a path the description does not have", "GET", `${R}/git/branches`, undefined, /no path of GitHub's description matches/],
    [
      "a method the path does not have",
      "DELETE",
      `${R}/git/commits/MAIN`,
      undefined,
      /no DELETE on \/repos\/\{owner\}\/\{repo\}\/git\/commits\/\{commit_sha\} \(it has GET\)/,
    ],
    [
      "a body field the operation does not declare",
      "POST",
      `${R}/git/trees`,
      { base_tre: "MAIN", tree: [] },
      /request body does not match.*base_tre|additional/i,
    ],
    ["a missing required body field", "POST", `${R}/git/refs`, { ref: "refs/heads/x" }, /required property "sha"/],
    ["a body field of the wrong type", "POST", `${R}/git/blobs`, { content: 5 }, /#\/content: Instance type "number" is invalid/],
    ["a body value outside its enum", "POST", `/orgs/${ORG}/repos`, { name: "x", visibility: "secret" }, /#\/visibility/],
    [
      "a tree entry with an unknown mode",
      "POST",
      `${R}/git/trees`,
      { tree: [{ path: "a", mode: "100666", type: "blob", sha: "MAIN" }] },
      /#\/tree\/0\/mode/,
    ],
    ["an undeclared query parameter", "GET", `${R}/pulls?headd=x`, undefined, /query parameter 'headd' is not in the description/],
    ["a query parameter of the wrong type", "GET", `${R}/pulls?per_page=lots`, undefined, /query parameter per_page does not match/],
    ["a query value outside its enum", "GET", `${R}/pulls?state=merged`, undefined, /query parameter state does not match/],
    ["a body on an operation that takes none", "DELETE", `${R}/git/refs/heads%2Fmain`, {}, /takes no request body/],
    ["a missing required body", "PATCH", `${R}/git/refs/heads%2Fmain`, undefined, /request body is required/],
    ["a body that is not JSON", "POST", `${R}/git/blobs`, "content=x", /not JSON/],
    [
      "a path parameter of the wrong type",
      "POST",
      `/app/installations/seven/access_tokens`,
      undefined,
      /path parameter installation_id does not match/,
    ],
    ["another host", "GET", `https://api.example.com${R}`, undefined, /not api\.github\.com/],
    ["a request without a User-Agent (GitHub refuses those)", "GET", R, undefined, /no User-Agent header/, { "user-agent": "" }],
  ])("refuses %s", async (_what, method, rawPath, body, expected, headers?: Record<string, string>) => {
    const { standin, send, main } = await standinWithRepo();
    const path = rawPath.replaceAll("MAIN", main);
    const payload = typeof body === "string" || body === undefined ? body : JSON.parse(JSON.stringify(body).replaceAll("MAIN", main));
    const res = await send(method, path, payload, headers);

    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(standin.violations.join("\n")).toMatch(expected);
    expect(() => standin.assertClean()).toThrow(/GitHub stand-in \(api\.github\.com .* \(@octokit\/openapi 23\.0\.2\)\)/);
  });

  it("accepts the same operations in the form the description allows", async () => {
    const { standin, send, main } = await standinWithRepo();
    const R = `/repos/${ORG}/demo`;
    expect((await send("POST", `${R}/git/blobs`, { content: "x", encoding: "utf-8" })).status).toBe(201);
    expect((await send("POST", `${R}/git/refs`, { ref: "refs/heads/x", sha: main })).status).toBe(201);
    expect((await send("GET", `${R}/pulls?state=open&per_page=5`)).status).toBe(200);
    expect((await send("PATCH", `${R}/git/refs/heads%2Fx`, { sha: main, force: false })).status).toBe(200);
    expect((await send("GET", `${R}/git/commits/${main}`)).status).toBe(200);
    expect(standin.violations).toEqual([]);
    standin.assertClean();
  });

  it("reports its own answer when it strays from the documented response schema", () => {
    const op = checker.operation("GET /repos/{owner}/{repo}/git/ref/{ref}");
    expect(checker.checkResponse(op, 200, { ref: "refs/heads/main", object: { sha: 1 } })).toEqual([
      expect.stringMatching(/GET \/repos\/\{owner\}\/\{repo\}\/git\/ref\/\{ref\} response 200 does not match GitHub's description/),
    ]);
    expect(checker.checkResponse(op, 418, {})).toEqual([expect.stringMatching(/status 418 is not a documented response/)]);
  });
});

describe("GitHub stand-in: credentials", () => {
  it("refuses an App JWT signed with another key, so the forge's call fails with 502 forge_failed", async () => {
    const keys = await appKeys();
    const other = await githubAppKeys();
    const standin = new GithubStandin({ org: ORG, appId: APP_ID, installationId: INSTALLATION_ID, publicKey: keys.publicKey });
    const forge = createGithubForge({
      org: ORG,
      credentials: { appId: APP_ID, privateKey: other.privateKeyPem, installationId: INSTALLATION_ID },
      fetch: standin.fetch,
    });

    const err = await forge.ensureRepository({ name: "x" }).catch((e: unknown) => e);

    expect(err).toMatchObject({ code: "forge_failed", status: 502, extra: { github_status: 401 } });
    expect(standin.requests.map((r) => r.operation)).toEqual(["POST /app/installations/{installation_id}/access_tokens"]);
    expect(standin.tokens.size).toBe(0);
    standin.assertClean();
  });

  it("hides a repository from a token of another organisation's installation", async () => {
    const { standin } = await orgStandin();
    await standin.createRepository(OTHER_ORG, "private-stuff");
    const { token } = standin.mintToken();
    const res = await standin.fetch(`https://api.github.com/repos/${OTHER_ORG}/private-stuff`, {
      headers: { authorization: `token ${token}`, "user-agent": "test-client" },
    });
    expect(res.status).toBe(404);
    const bad = await standin.fetch(`https://api.github.com/repos/${ORG}/x`, {
      headers: { authorization: "token ghs_notatoken000000000000000000000000", "user-agent": "test-client" },
    });
    expect(bad.status).toBe(401);
    standin.assertClean();
  });
});
