import type { ConfigSection } from "../lib/config";
import { approvalsConfig } from "../approvals/config";
import { registry } from "../lib/registry";
import { runnerConfig } from "../jobs/config";
import { inboxConfig } from "../jobs/inbox-config";
import { dispatchConfig, dispatchGuardConfig } from "../tasks/dispatch/config";
import { topologyConfig } from "../topology/config";
import { teamConfig } from "../team/config";
import { goalsConfig } from "../team/goals-config";
import { conversationsConfig } from "../conversations/config";
import { evolutionConfig } from "../evolution/config";
import { evalConfig } from "../eval/config";
import { councilConfig } from "../council/config";
import { projectsConfig } from "../projects/config";
import { reputationConfig } from "../nodes/reputation-config";
import { modelWorkConfig } from "../jobs/model-work";
import { eventsConfig } from "../events/config";
import { budgetsConfig } from "../spend/config";

/** Every feature's config section, by the name used in `/v1/config/:section`. */
export const CONFIG_SECTIONS: ReadonlyMap<string, ConfigSection> = registry<string, ConfigSection>({
  [runnerConfig.name]: runnerConfig,
  [inboxConfig.name]: inboxConfig,
  [approvalsConfig.name]: approvalsConfig,
  [dispatchConfig.name]: dispatchConfig,
  [dispatchGuardConfig.name]: dispatchGuardConfig,
  [topologyConfig.name]: topologyConfig,
  [teamConfig.name]: teamConfig,
  [goalsConfig.name]: goalsConfig,
  [conversationsConfig.name]: conversationsConfig,
  [evolutionConfig.name]: evolutionConfig,
  [evalConfig.name]: evalConfig,
  [councilConfig.name]: councilConfig,
  [projectsConfig.name]: projectsConfig,
  [reputationConfig.name]: reputationConfig,
  [modelWorkConfig.name]: modelWorkConfig,
  [eventsConfig.name]: eventsConfig,
  [budgetsConfig.name]: budgetsConfig,
});
