import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../../src/db/client";
import { AppError } from "../../../../src/lib/errors";
import { forgeFromEnv } from "../../../../src/projects/forge/from-env";
import { call } from "../../../factories";
import { appKeys, APP_ID, GithubStandin, INSTALLATION_ID, ORG } from "../../../factories/github-standin";

async function unavailable(promise: Promise<unknown>): Promise<AppError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  expect((err as AppError).code).toBe("unavailable");
  return err as AppError;
}

const setOrg = async (value: Record<string, unknown>) =>
  expect((await call("/v1/config/projects", { method: "PUT", body: value })).status).toBe(200);

describe("forge configuration ([projects] github_org + the App's secrets)", () => {
  it("has no forge until github_org is set, and says which setting is missing", async () => {
    await setOrg({});
    const section = (await call("/v1/config/projects")).body;
    expect(section.github_org).toBeUndefined();
    // the rest of the section is the projects feature's, all defaulted
    expect(section).toMatchObject({ decomposition_runtime: "offline", task_expiry_days: 90 });
    const err = await unavailable(forgeFromEnv({}, getDb(env.DB)));
    expect(err.detail).toBe("No forge is configured: set github_org in the projects config section");
  });

  it("refuses a github_org that is not a GitHub login with 422", async () => {
    for (const bad of ["-leading", "two--hyphens", "has space", "x".repeat(40), "trailing-"]) {
      const res = await call("/v1/config/projects", { method: "PUT", body: { github_org: bad } });
      expect(res.status, bad).toBe(422);
      expect(res.body.errors[0].path).toBe("github_org");
    }
  });

  it("names the missing secrets (never their values) once github_org is set", async () => {
    await setOrg({ github_org: ORG });
    expect((await call("/v1/config/projects")).body).toMatchObject({ github_org: ORG });

    const err = await unavailable(forgeFromEnv({ GITHUB_APP_PRIVATE_KEY: "  " }, getDb(env.DB)));
    expect(err.detail).toBe("The forge is missing its secrets: GITHUB_APP_ID, GITHUB_APP_PRIVATE_KEY, GITHUB_APP_INSTALLATION_ID");
    const badId = await unavailable(
      forgeFromEnv({ GITHUB_APP_ID: "1", GITHUB_APP_PRIVATE_KEY: "k", GITHUB_APP_INSTALLATION_ID: "12abc" }, getDb(env.DB)),
    );
    expect(badId.detail).toBe("GITHUB_APP_INSTALLATION_ID is not a positive integer");
  });

  it("builds a forge for the configured organisation from the secrets, which works against GitHub", async () => {
    await setOrg({ github_org: ORG });
    const keys = await appKeys();
    const standin = new GithubStandin({ org: ORG, appId: APP_ID, installationId: INSTALLATION_ID, publicKey: keys.publicKey });
    const secrets = {
      GITHUB_APP_ID: APP_ID,
      // As a secret often arrives: PKCS#1 with escaped newlines.
      GITHUB_APP_PRIVATE_KEY: keys.privateKeyPem.replace(/\n/g, "\\n"),
      GITHUB_APP_INSTALLATION_ID: String(INSTALLATION_ID),
    };

    const forge = await forgeFromEnv(secrets, getDb(env.DB), { fetch: standin.fetch });
    const repo = await forge.ensureRepository({ name: "configured" });

    expect(forge.org).toBe(ORG);
    expect(repo.full_name).toBe(`${ORG}/configured`);
    standin.assertClean();
  });
});
