import { describe, expect, it } from "vitest";
import { councilConfig, effectiveCouncilConfig, type CouncilSettings } from "../../../src/council/config";
import { decompositionStage, ethicsStage, prescreenStage, synthesisStage } from "../../../src/council/model-work-view";
import { modelWorkConfig } from "../../../src/jobs/model-work";

const stored = (v: Record<string, unknown> = {}): CouncilSettings => councilConfig.schema.parse(v);
const work = (v: Record<string, unknown> = {}) => modelWorkConfig.schema.parse(v);
const none = new Set<string>();
const claude = new Set(["offline", "claude"]);

const stageKeys = (c: ReturnType<typeof effectiveCouncilConfig>) => ({
  prescreen: c.prescreen,
  prescreen_runtime: c.prescreen_runtime,
  prescreen_model: c.prescreen_model,
  synthesis: c.synthesis,
  synthesis_runtime: c.synthesis_runtime,
  synthesis_model: c.synthesis_model,
  ethics_model: c.ethics_model,
  ethics_runtime: c.ethics_runtime,
});

describe("effectiveCouncilConfig (which stages model_work turns on)", () => {
  it("with model_work unset gives exactly the defaults the council had before it, whatever runners offer", () => {
    for (const offered of [none, claude]) {
      const c = effectiveCouncilConfig(stored(), work(), offered);
      expect(stageKeys(c)).toEqual({
        prescreen: "off",
        prescreen_runtime: "claude",
        prescreen_model: undefined,
        synthesis: "model",
        synthesis_runtime: "offline",
        synthesis_model: undefined,
        ethics_model: "off",
        ethics_runtime: "claude",
      });
      expect(c.model_work).toEqual({
        prescreen: { on_model: false, set_by: "default", fell_back_because: "model_work_unset" },
        synthesis: { on_model: false, set_by: "default", runtime: "offline", fell_back_because: "model_work_unset" },
        ethics: { on_model: false, set_by: "default", fell_back_because: "model_work_unset" },
      });
    }
    // The other keys keep their zod defaults.
    expect(effectiveCouncilConfig(stored(), work(), none)).toMatchObject({ prescreen_wait_ms: 15_000, synthesis_timeout_ms: 900_000 });
  });

  it("with model_work set and its runtime offered turns the prescreen, synthesis and ethics review on it, with its model", () => {
    const c = effectiveCouncilConfig(stored(), work({ runtime: "claude", model: "opus" }), claude);
    expect(stageKeys(c)).toEqual({
      prescreen: "model",
      prescreen_runtime: "claude",
      prescreen_model: "opus",
      synthesis: "model",
      synthesis_runtime: "claude",
      synthesis_model: "opus",
      ethics_model: "model",
      ethics_runtime: "claude",
    });
    const on = { on_model: true, set_by: "model_work", runtime: "claude", model: "opus" };
    expect(c.model_work).toEqual({ prescreen: on, synthesis: on, ethics: on });
  });

  it("with model_work's runtime offered by no live runner falls every stage back, saying runtime_not_offered", () => {
    for (const offered of [none, new Set(["offline", "codex"])]) {
      const c = effectiveCouncilConfig(stored(), work({ runtime: "claude" }), offered);
      expect([c.prescreen, c.synthesis, c.ethics_model]).toEqual(["off", "off", "off"]);
      const fallback = { on_model: false, set_by: "model_work", fell_back_because: "runtime_not_offered", wanted_runtime: "claude" };
      expect(c.model_work).toEqual({ prescreen: fallback, synthesis: fallback, ethics: fallback });
    }
  });

  it("lets an explicit stage setting win: off stays off, on stays on (unchecked), an explicit runtime and model are kept", () => {
    const c = effectiveCouncilConfig(
      stored({ prescreen: "off", synthesis: "model", synthesis_runtime: "grok", ethics_runtime: "codex", prescreen_model: "mine" }),
      work({ runtime: "claude", model: "opus" }),
      new Set(["claude", "codex"]),
    );
    expect(c.prescreen).toBe("off");
    expect(c.model_work.prescreen).toEqual({ on_model: false, set_by: "stage", fell_back_because: "stage_off" });
    // on by hand on grok, which nobody offers: not second-guessed; model_work's model is not grok's
    expect([c.synthesis, c.synthesis_runtime, c.synthesis_model]).toEqual(["model", "grok", undefined]);
    expect(c.model_work.synthesis).toEqual({ on_model: true, set_by: "stage", runtime: "grok" });
    // only the runtime set: model_work turns it on, on that runtime, since it is offered
    expect([c.ethics_model, c.ethics_runtime]).toEqual(["model", "codex"]);
    expect(c.model_work.ethics).toEqual({ on_model: true, set_by: "model_work", runtime: "codex" });
  });

  it("keeps explicit settings with model_work unset (today's configurations mean what they meant)", () => {
    const c = effectiveCouncilConfig(
      stored({ prescreen: "model", prescreen_runtime: "claude", synthesis_runtime: "claude" }),
      work(),
      none,
    );
    expect(stageKeys(c)).toMatchObject({
      prescreen: "model",
      prescreen_runtime: "claude",
      synthesis: "model",
      synthesis_runtime: "claude",
    });
    expect(c.model_work.prescreen).toEqual({ on_model: true, set_by: "stage", runtime: "claude" });
    expect(c.model_work.synthesis).toEqual({ on_model: true, set_by: "stage", runtime: "claude" });
    const offline = effectiveCouncilConfig(
      stored({ prescreen: "model", prescreen_runtime: "offline" }),
      work({ runtime: "claude" }),
      claude,
    );
    expect(offline.model_work.prescreen).toEqual({
      on_model: false,
      set_by: "stage",
      runtime: "offline",
      fell_back_because: "offline_runtime",
    });
  });

  it("refuses model_work on offline and without a known runtime", () => {
    expect(modelWorkConfig.schema.safeParse({ runtime: "offline" }).success).toBe(false);
    expect(modelWorkConfig.schema.safeParse({ runtime: "gpt-5" }).success).toBe(false);
    expect(modelWorkConfig.schema.safeParse({}).success).toBe(true);
  });
});

describe("the session view's model_work (read from what was recorded)", () => {
  const notOffered = { on_model: false, set_by: "model_work", fell_back_because: "runtime_not_offered", wanted_runtime: "claude" } as const;

  it("prescreen: off with the recorded reason, a model's verdict on_model, a fail-closed rejection with why", () => {
    expect(
      prescreenStage({ mode: "off", status: "skipped", source: "off", fell_back_because: "runtime_not_offered", wanted_runtime: "claude" }),
    ).toEqual({
      status: "done",
      on_model: false,
      fell_back_because: "runtime_not_offered",
      wanted_runtime: "claude",
    });
    // recorded before the reason existed
    expect(prescreenStage({ mode: "off", status: "skipped", source: "off" })).toMatchObject({ fell_back_because: "unrecorded" });
    expect(prescreenStage({ mode: "model", status: "passed", runtime: "claude", source: "claude" })).toEqual({
      status: "done",
      on_model: true,
      runtime: "claude",
    });
    expect(
      prescreenStage({ mode: "model", status: "rejected", runtime: "claude", source: "timeout", reason: "prescreen_timeout" }),
    ).toEqual({
      status: "done",
      on_model: false,
      runtime: "claude",
      fell_back_because: "model_timeout",
      detail: "prescreen_timeout",
    });
  });

  it("synthesis: the plan recorded at close of voting, else what the job gave", () => {
    expect(synthesisStage({})).toEqual({ status: "not_reached", on_model: false });
    expect(
      synthesisStage({
        synthesis: { status: "done", source: "template", note: "synthesis_runtime_not_offered" },
        model_work: { synthesis: notOffered },
      }),
    ).toEqual({
      status: "done",
      on_model: false,
      fell_back_because: "runtime_not_offered",
      wanted_runtime: "claude",
      detail: "synthesis_runtime_not_offered",
    });
    const onClaude = { on_model: true, set_by: "model_work", runtime: "claude" } as const;
    expect(
      synthesisStage({ synthesis: { status: "done", source: "model", runtime: "claude" }, model_work: { synthesis: onClaude } }),
    ).toEqual({
      status: "done",
      on_model: true,
      runtime: "claude",
    });
    expect(
      synthesisStage({
        synthesis: { status: "done", source: "template", runtime: "claude", note: "synthesis_timeout" },
        model_work: { synthesis: onClaude },
      }),
    ).toEqual({ status: "done", on_model: false, runtime: "claude", fell_back_because: "model_timeout", detail: "synthesis_timeout" });
  });

  it("ethics: off with the recorded reason, not_needed for a rejection, unavailable with why", () => {
    const rules = [{ rule: "denied_terms", passed: true }];
    expect(ethicsStage({ ethics: { rules, model: { status: "off" } }, model_work: { ethics: notOffered } })).toEqual({
      status: "done",
      on_model: false,
      fell_back_because: "runtime_not_offered",
      wanted_runtime: "claude",
    });
    const onClaude = { on_model: true, set_by: "model_work", runtime: "claude" } as const;
    expect(ethicsStage({ ethics: { rules, model: { status: "not_needed" } }, model_work: { ethics: onClaude } })).toMatchObject({
      on_model: false,
      fell_back_because: "not_needed",
    });
    expect(
      ethicsStage({ ethics: { rules, model: { status: "unavailable", reason: "ethics_job_dead" } }, model_work: { ethics: onClaude } }),
    ).toMatchObject({ on_model: false, fell_back_because: "model_failed", detail: "ethics_job_dead" });
  });

  it("decomposition: the plan of its latest attempt and where the project stands", () => {
    const fellBack = { ...notOffered, runtime: "offline" };
    expect(decompositionStage(undefined, { decompState: null, decompSource: null, decompReason: null })).toEqual({
      status: "not_reached",
      on_model: false,
    });
    expect(
      decompositionStage(
        { runtime: "offline", model_work: fellBack },
        { decompState: "failed", decompSource: null, decompReason: "runtime_not_offered" },
      ),
    ).toEqual({
      status: "failed",
      on_model: false,
      runtime: "offline",
      fell_back_because: "runtime_not_offered",
      wanted_runtime: "claude",
    });
    expect(
      decompositionStage(
        { runtime: "claude", model_work: { on_model: true, set_by: "model_work", runtime: "claude" } },
        { decompState: "done", decompSource: "model", decompReason: null },
      ),
    ).toEqual({ status: "done", on_model: true, runtime: "claude" });
    expect(
      decompositionStage(
        { runtime: "offline", model_work: fellBack },
        { decompState: "done", decompSource: "manager", decompReason: null },
      ),
    ).toEqual({
      status: "done",
      on_model: false,
      fell_back_because: "runtime_not_offered",
    });
  });
});
