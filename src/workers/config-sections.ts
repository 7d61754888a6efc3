import type { ConfigSection } from "../lib/config";
import { runnerConfig } from "../jobs/config";
import { councilConfig } from "../council/config";

/** Every feature's config section, by the name used in `/v1/config/:section`. */
export const CONFIG_SECTIONS: Record<string, ConfigSection> = {
  [runnerConfig.name]: runnerConfig,
  [councilConfig.name]: councilConfig,
};
