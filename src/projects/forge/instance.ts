import type { Db } from "../../db/client";
import type { Env } from "../../env";
import { readSection } from "../../lib/config";
import { sha256Hex } from "../../lib/crypto";
import { FORGE_SECRETS, projectsConfig } from "./config";
import type { Forge } from "./forge";
import { forgeFromEnv } from "./from-env";

type ForgeSecrets = Partial<Record<(typeof FORGE_SECRETS)[number], string>>;

/** Where the forge's requests go and which App it is, when that is not the deployment's (tests). */
export interface ForgeTransport {
  fetch: typeof fetch;
  secrets?: ForgeSecrets;
}

// One Forge per isolate: its Octokit caches the installation token (an hour's worth), so building a
// Forge per request would mint a token per request. Rebuilt when the org or the App changes.
let cached: { key: string; forge: Forge } | undefined;
let transport: ForgeTransport | undefined;

/**
 * Tests only: sends the forge's requests to `t.fetch` (the GitHub stand-in) with the stand-in App's
 * secrets; `undefined` restores the deployment's. The cached Forge is dropped either way.
 */
export function setForgeTransport(t: ForgeTransport | undefined): void {
  transport = t;
  cached = undefined;
}

/**
 * The configured Forge, shared by every request this isolate serves, or `unavailable` naming what
 * is missing (setting and secret names only; never a value).
 */
export async function projectForge(env: Env, db: Db): Promise<Forge> {
  const secrets: ForgeSecrets = transport?.secrets ?? {
    GITHUB_APP_ID: env.GITHUB_APP_ID,
    GITHUB_APP_PRIVATE_KEY: env.GITHUB_APP_PRIVATE_KEY,
    GITHUB_APP_INSTALLATION_ID: env.GITHUB_APP_INSTALLATION_ID,
  };
  const { github_org } = await readSection(db, projectsConfig);
  // The key's hash stands in for the key itself, so no secret sits in a comparison string.
  const key = [
    github_org ?? "",
    secrets.GITHUB_APP_ID ?? "",
    secrets.GITHUB_APP_INSTALLATION_ID ?? "",
    await sha256Hex(secrets.GITHUB_APP_PRIVATE_KEY ?? ""),
  ].join("|");
  if (cached?.key === key) return cached.forge;
  const forge = await forgeFromEnv(secrets, db, transport ? { fetch: transport.fetch } : {});
  cached = { key, forge };
  return forge;
}
