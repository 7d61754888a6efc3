/** @jsxImportSource hono/jsx */
import type { listSkills, SkillView } from "../../evolution/skills-store";
import type { employeeView } from "../../tasks/employees";
import { Badge, Csrf, Empty, FieldErrors, Num, ProblemNote, Time, type FormProblem } from "../components/common";
import type { Viewer } from "../layout";
import { ConsolePage } from "./console-shell";
import { EmployeeTabs } from "./console-employees";

type Employee = ReturnType<typeof employeeView>;
type SkillList = Awaited<ReturnType<typeof listSkills>>;

/** The create form's fields as typed (kept when the form is refused). */
export interface SkillDraft {
  name?: string;
  description?: string;
  triggers?: string;
  body?: string;
}

/** A refused form: the create form (`skillId` null) or one skill's switch. */
export interface SkillProblem {
  skillId: string | null;
  problem: FormProblem;
}

const ACTIONS: Record<SkillView["state"], ("activate" | "deactivate" | "retire")[]> = {
  inactive: ["activate", "retire"],
  active: ["deactivate", "retire"],
  retired: [],
};

function SkillSwitches(props: { employeeId: string; s: SkillView; viewer: Viewer }) {
  return (
    <div class="actions">
      {ACTIONS[props.s.state].map((action) => (
        <form method="post" action={`/console/employees/${props.employeeId}/skills/${props.s.skill_id}/${action}`}>
          <Csrf token={props.viewer.csrf} />
          <button type="submit" id={`skill-${action}-${props.s.skill_id}`}>
            {action[0]!.toUpperCase() + action.slice(1)}
          </button>
        </form>
      ))}
    </div>
  );
}

function Field(props: {
  id: string;
  name: keyof SkillDraft;
  label: string;
  draft?: SkillDraft;
  problem?: FormProblem | null;
  area?: boolean;
  hint?: string;
}) {
  const errors = props.problem?.fields[props.name];
  const described = [props.hint ? `${props.id}-hint` : null, errors ? `${props.id}-errors` : null].filter(Boolean).join(" ") || undefined;
  const common = {
    id: props.id,
    name: props.name,
    required: true,
    "aria-invalid": errors ? "true" : undefined,
    "aria-describedby": described,
  } as const;
  return (
    <p>
      <label for={props.id}>{props.label}</label>
      {props.area ? (
        <textarea {...common} rows={6}>
          {props.draft?.[props.name] ?? ""}
        </textarea>
      ) : (
        <input {...common} value={props.draft?.[props.name] ?? ""} />
      )}
      {props.hint ? (
        <span class="hint" id={`${props.id}-hint`}>
          {props.hint}
        </span>
      ) : null}
      <FieldErrors id={`${props.id}-errors`} errors={errors} />
    </p>
  );
}

function CreateForm(props: { employeeId: string; viewer: Viewer; draft?: SkillDraft; problem?: FormProblem | null }) {
  return (
    <form id="skill-create" method="post" action={`/console/employees/${props.employeeId}/skills`}>
      <Csrf token={props.viewer.csrf} />
      <ProblemNote problem={props.problem} />
      <Field id="skill-name" name="name" label="Name" draft={props.draft} problem={props.problem} />
      <Field id="skill-description" name="description" label="Description" draft={props.draft} problem={props.problem} />
      <Field
        id="skill-triggers"
        name="triggers"
        label="Trigger terms"
        hint="One per line: a closed conversation that mentions one activates the skill (with skill_auto_activate)."
        draft={props.draft}
        problem={props.problem}
        area
      />
      <Field id="skill-body" name="body" label="Body (what goes into the prompt)" draft={props.draft} problem={props.problem} area />
      <button type="submit">Create skill</button>
    </form>
  );
}

/**
 * The skills tab (`GET /v1/employees/:id/skills`): each skill with its state, uses and lift (unknown
 * until measured), and for a manager its switches and the create form.
 */
export function SkillsPage(props: {
  viewer: Viewer;
  employee: Employee;
  list: SkillList;
  canWrite: boolean;
  draft?: SkillDraft;
  problem?: SkillProblem | null;
}) {
  const e = props.employee;
  const active = props.list.skills.filter((s) => s.state === "active").length;
  return (
    <ConsolePage title={`${e.name}: skills`} path="/console/employees" viewer={props.viewer}>
      <EmployeeTabs id={e.employee_id} tab="skills" />
      <section id="skills" data-live="skill." aria-label="Skills">
        <h2>Skills</h2>
        <p class="meta">
          {active} of at most {props.list.max_active_skills} active · prompt budget {props.list.skill_token_budget} tokens
        </p>
        {props.list.skills.length === 0 ? (
          <Empty>No skill yet.</Empty>
        ) : (
          <table>
            <thead>
              <tr>
                <th scope="col">Skill</th>
                <th scope="col">State</th>
                <th scope="col">Triggers</th>
                <th scope="col">Uses</th>
                <th scope="col">Lift</th>
                <th scope="col">Since</th>
                {props.canWrite ? <th scope="col">Change</th> : null}
              </tr>
            </thead>
            <tbody>
              {props.list.skills.map((s) => (
                <tr id={`skill-${s.skill_id}`} data-state={s.state}>
                  <th scope="row">
                    {s.name}
                    <br />
                    <span class="meta">{s.description}</span>
                  </th>
                  <td>
                    <Badge status={s.state} />
                    {s.state_reason ? <span class="reason"> ({s.state_reason.replaceAll("_", " ")})</span> : null}
                  </td>
                  <td>{s.triggers.join(", ")}</td>
                  <td>
                    {s.uses} ({s.measured_uses} measured)
                  </td>
                  <td data-lift={s.lift === null ? "unknown" : String(s.lift)}>
                    <Num value={s.lift} digits={3} />
                  </td>
                  <td>
                    <Time at={s.state_since} />
                  </td>
                  {props.canWrite ? (
                    <td>
                      {props.problem?.skillId === s.skill_id ? <ProblemNote problem={props.problem.problem} /> : null}
                      <SkillSwitches employeeId={e.employee_id} s={s} viewer={props.viewer} />
                    </td>
                  ) : null}
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      {props.canWrite ? (
        <section id="skill-new" aria-label="New skill">
          <h2>New skill</h2>
          <CreateForm
            employeeId={e.employee_id}
            viewer={props.viewer}
            draft={props.draft}
            problem={props.problem?.skillId === null ? props.problem.problem : null}
          />
        </section>
      ) : (
        <p class="note">Creating and switching skills needs the manager role.</p>
      )}
    </ConsolePage>
  );
}
