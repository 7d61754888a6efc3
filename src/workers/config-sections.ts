import type { ConfigSection } from "../lib/config";
import { registry } from "../lib/registry";
import { runnerConfig } from "../jobs/config";
import { teamConfig } from "../team/config";
import { councilConfig } from "../council/config";
import { projectsConfig } from "../projects/config";

/** Every feature's config section, by the name used in `/v1/config/:section`. */
export const CONFIG_SECTIONS: ReadonlyMap<string, ConfigSection> = registry<string, ConfigSection>({
  [runnerConfig.name]: runnerConfig,
  [teamConfig.name]: teamConfig,
  [councilConfig.name]: councilConfig,
  [projectsConfig.name]: projectsConfig,
});
