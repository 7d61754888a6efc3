import { describe, expect, it } from "vitest";
import { modelWorkConfig } from "../../../src/jobs/model-work";
import { effectiveProjectsConfig, projectsConfig } from "../../../src/projects/config";

const stored = (v: Record<string, unknown> = {}) => projectsConfig.schema.parse(v);
const work = (v: Record<string, unknown> = {}) => modelWorkConfig.schema.parse(v);

describe("effectiveProjectsConfig (the decomposition under model_work)", () => {
  it("with model_work unset decomposes on offline, as before, saying model_work_unset", () => {
    for (const offered of [new Set<string>(), new Set(["claude"])]) {
      const c = effectiveProjectsConfig(stored(), work(), offered);
      expect([c.decomposition_runtime, c.decomposition_model]).toEqual(["offline", undefined]);
      expect(c.decomposition).toEqual({ on_model: false, set_by: "default", runtime: "offline", fell_back_because: "model_work_unset" });
    }
    // every other key is untouched
    expect(effectiveProjectsConfig(stored({ github_org: "acme" }), work(), new Set())).toMatchObject({
      github_org: "acme",
      task_expiry_days: 90,
    });
  });

  it("with model_work set and offered decomposes on its runtime and model", () => {
    const c = effectiveProjectsConfig(stored(), work({ runtime: "codex", model: "gpt-5-codex" }), new Set(["codex"]));
    expect([c.decomposition_runtime, c.decomposition_model]).toEqual(["codex", "gpt-5-codex"]);
    expect(c.decomposition).toEqual({ on_model: true, set_by: "model_work", runtime: "codex", model: "gpt-5-codex" });
  });

  it("with model_work's runtime not offered decomposes as without it (offline), saying runtime_not_offered", () => {
    const c = effectiveProjectsConfig(stored(), work({ runtime: "claude" }), new Set(["offline"]));
    expect(c.decomposition_runtime).toBe("offline");
    expect(c.decomposition).toEqual({
      on_model: false,
      set_by: "model_work",
      runtime: "offline",
      fell_back_because: "runtime_not_offered",
      wanted_runtime: "claude",
    });
  });

  it("keeps a decomposition_runtime the operator wrote, unchecked, with its own model", () => {
    const c = effectiveProjectsConfig(
      stored({ decomposition_runtime: "grok", decomposition_model: "grok-4" }),
      work({ runtime: "claude" }),
      new Set(),
    );
    expect([c.decomposition_runtime, c.decomposition_model]).toEqual(["grok", "grok-4"]);
    expect(c.decomposition).toEqual({ on_model: true, set_by: "stage", runtime: "grok", model: "grok-4" });
    const offline = effectiveProjectsConfig(stored({ decomposition_runtime: "offline" }), work({ runtime: "claude" }), new Set(["claude"]));
    expect(offline.decomposition).toEqual({ on_model: false, set_by: "stage", runtime: "offline", fell_back_because: "offline_runtime" });
  });
});
