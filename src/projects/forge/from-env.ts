import type { Db } from "../../db/client";
import type { Env } from "../../env";
import { readSection } from "../../lib/config";
import { AppError } from "../../lib/errors";
import { FORGE_SECRETS, projectsConfig } from "./config";
import type { Forge } from "./forge";
import { createGithubForge } from "./github";

type ForgeEnv = Pick<Env, (typeof FORGE_SECRETS)[number]>;

/**
 * The configured forge, or `unavailable` naming what is missing (names only: a secret's value
 * never appears in an error). `fetch` is for tests, which point it at the GitHub stand-in.
 */
export async function forgeFromEnv(env: ForgeEnv, db: Db, options: { fetch?: typeof fetch } = {}): Promise<Forge> {
  const { github_org } = await readSection(db, projectsConfig);
  if (!github_org) throw new AppError("unavailable", "No forge is configured: set github_org in the projects config section");
  const missing = FORGE_SECRETS.filter((name) => !env[name]?.trim());
  if (missing.length > 0) throw new AppError("unavailable", `The forge is missing its secrets: ${missing.join(", ")}`);
  const installationId = Number(env.GITHUB_APP_INSTALLATION_ID);
  if (!Number.isSafeInteger(installationId) || installationId <= 0) {
    throw new AppError("unavailable", "GITHUB_APP_INSTALLATION_ID is not a positive integer");
  }
  return createGithubForge({
    org: github_org,
    credentials: { appId: env.GITHUB_APP_ID!.trim(), privateKey: env.GITHUB_APP_PRIVATE_KEY!, installationId },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
}
