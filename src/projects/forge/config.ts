import { z } from "zod";
import { defineConfigSection } from "../../lib/config";

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
