import type { SuiteFile } from "./suites";

// The shipped eval suites, bundled into the Worker as text. wrangler.toml's `[[rules]] type = "Text"`
// entry for `**/*.toml` makes each import below the file's contents, in `wrangler deploy`/`dev` (esbuild)
// and in the workers tests (the vitest plugin applies the same rules). Neither bundler can list a
// directory at run time, so every case file is imported by name: add a line here with each new case.
// test/workers/eval/suites.test.ts globs evals/ and fails when this list and the directory disagree.
import c1 from "../../evals/config-edits/compat-date.toml";
import c2 from "../../evals/config-edits/cron-trigger.toml";
import c3 from "../../evals/config-edits/env-example.toml";
import c4 from "../../evals/config-edits/gitignore-build-output.toml";
import c5 from "../../evals/config-edits/node-engine.toml";
import c6 from "../../evals/config-edits/remove-debug-log.toml";
import c7 from "../../evals/config-edits/tsconfig-strict.toml";
import c8 from "../../evals/log-triage/count-5xx.toml";
import c9 from "../../evals/log-triage/fix-failing-test.toml";
import c10 from "../../evals/log-triage/postmortem-sections.toml";
import c11 from "../../evals/log-triage/redact-emails.toml";
import c12 from "../../evals/log-triage/slowest-endpoint.toml";
import c13 from "../../evals/log-triage/utc-window.toml";

export const BUNDLED_SUITE_FILES: readonly SuiteFile[] = [
  { path: "evals/config-edits/compat-date.toml", text: c1 },
  { path: "evals/config-edits/cron-trigger.toml", text: c2 },
  { path: "evals/config-edits/env-example.toml", text: c3 },
  { path: "evals/config-edits/gitignore-build-output.toml", text: c4 },
  { path: "evals/config-edits/node-engine.toml", text: c5 },
  { path: "evals/config-edits/remove-debug-log.toml", text: c6 },
  { path: "evals/config-edits/tsconfig-strict.toml", text: c7 },
  { path: "evals/log-triage/count-5xx.toml", text: c8 },
  { path: "evals/log-triage/fix-failing-test.toml", text: c9 },
  { path: "evals/log-triage/postmortem-sections.toml", text: c10 },
  { path: "evals/log-triage/redact-emails.toml", text: c11 },
  { path: "evals/log-triage/slowest-endpoint.toml", text: c12 },
  { path: "evals/log-triage/utc-window.toml", text: c13 },
];
