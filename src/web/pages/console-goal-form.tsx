/** @jsxImportSource hono/jsx */
import { Csrf, FieldErrors, ProblemNote, type FormProblem } from "../components/common";
import type { Viewer } from "../layout";

/** The goal form's fields as typed, shown again when the form is refused. */
export interface GoalDraft {
  title?: string;
  acceptance_criteria?: string;
  rounds_left?: string;
}

/** Messages for a field path and every path under it (`acceptance_criteria.2`). */
export function errorsUnder(problem: FormProblem | null | undefined, path: string): string[] | undefined {
  if (!problem) return undefined;
  const out = Object.entries(problem.fields)
    .filter(([p]) => p === path || p.startsWith(`${path}.`))
    .flatMap(([, msgs]) => msgs);
  return out.length ? out : undefined;
}

/**
 * The employee page's "Give a goal" section: `POST /v1/employees/:id/goals` for a browser. A
 * manager sees the form (not on a retired employee); anyone else a note.
 */
export function GoalSection(props: {
  employeeId: string;
  status: string;
  viewer: Viewer;
  problem?: FormProblem | null;
  draft?: GoalDraft;
}) {
  const p = props.problem;
  const d = props.draft ?? {};
  const titleErrors = errorsUnder(p, "title");
  const criteriaErrors = errorsUnder(p, "acceptance_criteria");
  const roundsErrors = errorsUnder(p, "rounds_left");
  const described = (id: string, errors: string[] | undefined, hint?: boolean) =>
    errors
      ? { "aria-invalid": "true", "aria-describedby": hint ? `${id}-errors ${id}-hint` : `${id}-errors` }
      : hint
        ? { "aria-describedby": `${id}-hint` }
        : {};
  const body =
    props.viewer.role === "viewer" ? (
      <p class="note">Giving a goal needs the manager role.</p>
    ) : props.status === "retired" && !p ? (
      <p class="note">A retired employee takes no new goal.</p>
    ) : (
      <form method="post" action={`/console/employees/${props.employeeId}/goals`} id="goal-form">
        <Csrf token={props.viewer.csrf} />
        <ProblemNote problem={p} />
        <label for="goal-title">Title</label>
        <input id="goal-title" name="title" required maxlength={300} value={d.title ?? ""} {...described("goal-title", titleErrors)} />
        <FieldErrors id="goal-title-errors" errors={titleErrors} />
        <label for="goal-criteria">Acceptance criteria, one per line</label>
        <textarea id="goal-criteria" name="acceptance_criteria" rows={4} required {...described("goal-criteria", criteriaErrors, true)}>
          {d.acceptance_criteria ?? ""}
        </textarea>
        <p class="meta" id="goal-criteria-hint">
          At least one: how a person (or the evaluator) tells the goal is met.
        </p>
        <FieldErrors id="goal-criteria-errors" errors={criteriaErrors} />
        <label for="goal-rounds">Rounds it may spend (optional)</label>
        <input
          id="goal-rounds"
          name="rounds_left"
          type="number"
          min={0}
          max={50}
          inputmode="numeric"
          value={d.rounds_left ?? ""}
          {...described("goal-rounds", roundsErrors, true)}
        />
        <p class="meta" id="goal-rounds-hint">
          Blank: the <code>[goals]</code> iteration cap. Fewer than 3 keeps the goal solo.
        </p>
        <FieldErrors id="goal-rounds-errors" errors={roundsErrors} />
        <button type="submit">Give the goal</button>
      </form>
    );
  return (
    <section aria-labelledby="goal-h" id="employee-goal">
      <h2 id="goal-h">Give a goal</h2>
      {body}
    </section>
  );
}
