import { describe, expect, it } from "vitest";
import { AppError } from "../../../../src/lib/errors";
import { createGithubClient, guardedFetch } from "../../../../src/projects/forge/octokit";
import { Redactor } from "../../../../src/projects/forge/redact";
import { scopeViolation } from "../../../../src/projects/forge/scope";
import { APP_ID, githubWorld, INSTALLATION_ID, ORG, orgStandin, OTHER_ORG } from "../../../factories/github-standin";

const scope = { org: ORG, installationId: INSTALLATION_ID };
const API = "https://api.github.com";

describe("scopeViolation", () => {
  it.each([
    ["GET", `${API}/repos/${ORG}/demo`],
    ["PATCH", `${API}/repos/${ORG}/demo/git/refs/heads%2Ftask%2Fx`],
    ["GET", `${API}/repos/CrewPlane-Projects/demo`],
    ["POST", `${API}/orgs/${ORG}/repos`],
    ["POST", `${API}/app/installations/${INSTALLATION_ID}/access_tokens`],
  ])("lets %s %s through", (method, url) => {
    expect(scopeViolation(scope, { method, url })).toBeNull();
  });

  it.each([
    ["another owner's repository", "GET", `${API}/repos/${OTHER_ORG}/demo`, undefined, /owner 'someone-else' is not the organisation/],
    ["another organisation", "POST", `${API}/orgs/${OTHER_ORG}/repos`, undefined, /owner 'someone-else'/],
    ["the App's own user space", "POST", `${API}/user/repos`, undefined, /outside \/repos\/crewplane-projects/],
    ["a search across GitHub", "GET", `${API}/search/code?q=org:${OTHER_ORG}`, undefined, /outside/],
    ["an owner with an encoded slash", "GET", `${API}/repos/${ORG}%2F..%2F${OTHER_ORG}/demo`, undefined, /is not the organisation/],
    [
      "an encoded dot segment climbing out of the organisation",
      "GET",
      `${API}/repos/${ORG}/%2e%2e/x`,
      undefined,
      /owner 'x' is not the organisation/,
    ],
    ["broken percent-encoding", "GET", `${API}/repos/${ORG}/%E0%A4%A/x`, undefined, /percent-encoding/],
    ["another installation's token", "POST", `${API}/app/installations/778/access_tokens`, undefined, /installation '778'/],
    ["another host", "GET", `https://api.example.com/repos/${ORG}/demo`, undefined, /host 'api.example.com'/],
    ["plain http", "GET", `http://api.github.com/repos/${ORG}/demo`, undefined, /host/],
    ["credentials in the URL", "GET", `https://x:y@api.github.com/repos/${ORG}/demo`, undefined, /host/],
    [
      "a cross-owner pull request head",
      "POST",
      `${API}/repos/${ORG}/demo/pulls`,
      { head: `${OTHER_ORG}:main`, base: "main", title: "t" },
      /'head' names owner 'someone-else'/,
    ],
    ["a transfer to another owner", "POST", `${API}/repos/${ORG}/demo/transfer`, JSON.stringify({ new_owner: OTHER_ORG }), /'new_owner'/],
    ["a fork into another organisation", "POST", `${API}/repos/${ORG}/demo/forks`, { organization: OTHER_ORG }, /'organization'/],
    ["a repository generated for another owner", "POST", `${API}/repos/${ORG}/tpl/generate`, { owner: OTHER_ORG, name: "x" }, /'owner'/],
  ])("refuses %s", (_what, method, url, body, expected) => {
    expect(scopeViolation(scope, { method, url, body })).toMatch(expected);
  });
});

async function refusal(promise: Promise<unknown>): Promise<AppError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  expect((err as AppError).code).toBe("forge_scope");
  expect((err as AppError).status).toBe(403);
  return err as AppError;
}

describe("forge scope refusal: nothing is sent", () => {
  it("refuses a contribution to a repository of another owner before any request", async () => {
    const { standin, forge } = await githubWorld();
    await standin.createRepository(OTHER_ORG, "victim");

    const err = await refusal(
      forge.contribute({
        repo: `${OTHER_ORG}/victim`,
        task_id: "task_1",
        message: "x",
        files: [{ path: "a", content: "a" }],
        attribution: { node_id: "node_1", project: "p", council_session_id: "s" },
      }),
    );

    expect(err.detail).toContain(`owner '${OTHER_ORG}' is not the organisation '${ORG}'`);
    expect(standin.requests).toEqual([]);
    await refusal(forge.ensureRepository({ name: `${OTHER_ORG}/new` }));
    await refusal(forge.openPullRequest({ repo: `${OTHER_ORG}/victim`, branch: "main", title: "t" }));
    expect(standin.requests).toEqual([]);
  });

  it("refuses any Octokit call outside the organisation before a token is even minted", async () => {
    const { standin, keys } = await orgStandin();
    const { octokit } = createGithubClient({
      org: ORG,
      credentials: { appId: APP_ID, privateKey: keys.privateKeyPem, installationId: INSTALLATION_ID },
      fetch: standin.fetch,
    });

    await refusal(octokit.request("GET /repos/{owner}/{repo}", { owner: OTHER_ORG, repo: "x" }));
    await refusal(octokit.request("GET /user/repos"));
    await refusal(
      octokit.request("POST /repos/{owner}/{repo}/pulls", { owner: ORG, repo: "x", head: `${OTHER_ORG}:main`, base: "main", title: "t" }),
    );
    await refusal(octokit.request("GET /repos/{owner}/{repo}", { owner: ORG, repo: "x", baseUrl: "https://api.example.com" }));
    await refusal(octokit.request("POST /app/installations/{installation_id}/access_tokens", { installation_id: 778 }));

    expect(standin.requests).toEqual([]);
    standin.assertClean();
  });

  it("refuses at the fetch boundary too, for anything that would bypass Octokit's hooks", async () => {
    const { standin } = await githubWorld();
    const fetchOut = guardedFetch(scope, new Redactor(), standin.fetch);

    await refusal(fetchOut(`${API}/repos/${OTHER_ORG}/x`));
    await refusal(fetchOut(`${API}/repos/${ORG}/x/pulls`, { method: "POST", body: JSON.stringify({ head: `${OTHER_ORG}:main` }) }));
    await refusal(fetchOut(new Request(`https://api.example.com/repos/${ORG}/x`)));

    expect(standin.requests).toEqual([]);
  });
});
