import { z } from "zod";
import type { Db } from "../../db/client";
import type { Env } from "../../env";
import { defineConfigSection, readSection } from "../../lib/config";
import { AppError } from "../../lib/errors";
import type { Forge } from "./forge";
import { createGithubForge } from "./github";

/** A GitHub organisation login: 1-39 letters, digits and single inner hyphens. */
const githubLogin = z.string().regex(/^[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}$/, "must be a GitHub organisation login");

/**
 * `projects` config section. `github_org` is the one organisation official projects live in (seed
 * 004: the integration token is confined to it); unset, there is no forge. The App's credentials
 * are secrets, never config: GITHUB_APP_ID, GITHUB_APP_PRIVATE_KEY, GITHUB_APP_INSTALLATION_ID.
 */
export const projectsConfig = defineConfigSection(
  "projects",
  z.object({
    github_org: githubLogin.optional(),
  }),
);
export type ProjectsConfig = z.infer<typeof projectsConfig.schema>;

export const FORGE_SECRETS = ["GITHUB_APP_ID", "GITHUB_APP_PRIVATE_KEY", "GITHUB_APP_INSTALLATION_ID"] as const;

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
