import { createGithubForge, type GithubForgeOptions } from "../../../src/projects/forge/github";
import type { Forge } from "../../../src/projects/forge/forge";
import { githubAppKeys, type AppKeys } from "./app-keys";
import { GithubStandin } from "./standin";

export { GithubStandin } from "./standin";
export { githubAppKeys } from "./app-keys";

export const ORG = "crewplane-projects";
export const OTHER_ORG = "someone-else";
export const APP_ID = "424242";
export const INSTALLATION_ID = 777;

let keys: Promise<AppKeys> | undefined;
/** One key pair per test file (generating RSA keys is the slow part). */
export const appKeys = () => (keys ??= githubAppKeys());

export interface GithubWorld {
  standin: GithubStandin;
  forge: Forge;
  keys: AppKeys;
}

/** A fresh GitHub stand-in and a forge pointed at it, authenticated with the PKCS#1 key GitHub issues. */
/** The stand-in for the configured organisation (with OTHER_ORG beside it), and the App's keys. */
export async function orgStandin(): Promise<{ standin: GithubStandin; keys: Awaited<ReturnType<typeof appKeys>> }> {
  const keys = await appKeys();
  return {
    standin: new GithubStandin({
      org: ORG,
      appId: APP_ID,
      installationId: INSTALLATION_ID,
      publicKey: keys.publicKey,
      otherOrgs: [OTHER_ORG],
    }),
    keys,
  };
}

export async function githubWorld(options: Partial<GithubForgeOptions> = {}): Promise<GithubWorld> {
  const { standin, keys: k } = await orgStandin();
  const forge = createGithubForge({
    org: ORG,
    credentials: { appId: APP_ID, privateKey: k.privateKeyPem, installationId: INSTALLATION_ID },
    fetch: standin.fetch,
    ...options,
  });
  return { standin, forge, keys: k };
}
