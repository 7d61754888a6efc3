// The section lives with the rest of the projects feature (../config.ts); the forge reads it here.
export { projectsConfig } from "../config";

/** The App's credentials: secrets (`wrangler secret put`), never config. */
export const FORGE_SECRETS = ["GITHUB_APP_ID", "GITHUB_APP_PRIVATE_KEY", "GITHUB_APP_INSTALLATION_ID"] as const;
