/** @jsxImportSource hono/jsx */
import { Hono, type Context } from "hono";
import * as z from "zod";
import { formValues, placeErrors, schemaFields, valueFromForm, type SchemaField } from "../../console/schema-form";
import { getDb, type Db } from "../../db/client";
import { presentSectionAt, readSection, writeSection, type ConfigSection } from "../../lib/config";
import { AppError, fieldErrorsFromIssues, notFound } from "../../lib/errors";
import type { FormProblem } from "../../web/components/common";
import type { Viewer } from "../../web/layout";
import { ConfigListPage, ConfigSectionPage } from "../../web/pages/console-config";
import { CONFIG_SECTIONS } from "../config-sections";
import { requireConsole, type ConsoleEnv } from "../middleware/console-session";
import { htmlPages } from "../middleware/html-pages";
import { validate } from "../middleware/validate";
import { describe, type ResponseDoc } from "../openapi/describe";
import { formProblem, page, problemStatus, readForm } from "./html";

type C = Context<ConsoleEnv>;

const pageDoc = (description: string): ResponseDoc => ({ description, type: "text/html" });
// Mounted by console.tsx before its own `htmlPages()`, so each route takes the page middleware here.
const html = htmlPages();
const sectionParam = z.object({ section: z.string().min(1).max(64) });

function viewerOf(c: C): Viewer {
  const s = c.var.session;
  return { name: s.principal.name, role: s.principal.role, csrf: s.csrfToken };
}

function sectionOrThrow(name: string) {
  const section = CONFIG_SECTIONS.get(name);
  if (!section) throw notFound(`config section '${name}'`);
  return section;
}

/** What a refused save shows again: the draft of the form that was posted, and the problem. */
type Refused =
  { mode: "fields"; draft: Record<string, string>; problem: FormProblem } | { mode: "json"; draft: string; problem: FormProblem };

async function sectionPage(
  c: C,
  db: Db,
  name: string,
  section: ConfigSection,
  shown: { saved?: boolean; refused?: Refused },
  status: 200 | 403 | 404 | 409 | 422 | 429 = 200,
) {
  const stored = await readSection(db, section);
  const fields = schemaFields(section.schema);
  const refused = shown.refused;
  return page(
    c,
    <ConfigSectionPage
      viewer={viewerOf(c)}
      section={name}
      fields={fields}
      values={refused?.mode === "fields" ? refused.draft : formValues(fields, stored)}
      // What the section holds, not its `view`: that is what a write takes back unchanged.
      json={refused?.mode === "json" ? refused.draft : JSON.stringify(stored, null, 2)}
      effective={await presentSectionAt(db, section, stored, c.var.clock.now())}
      problem={refused?.problem ?? null}
      mode={refused?.mode}
      saved={shown.saved === true}
    />,
    status,
  );
}

/**
 * The fields form read into the section's value. A JSON field that does not parse is refused with
 * whatever else the schema finds wrong with the rest, so one save shows every problem; nothing is
 * written while any remains.
 */
function valueOfFields(name: string, section: ConfigSection, fields: readonly SchemaField[], form: Record<string, string>): unknown {
  const read = valueFromForm(fields, form);
  if (read.errors.length === 0) return read.value;
  const unread = read.errors.map((e) => e.path);
  const parsed = section.schema.strict().safeParse(read.value);
  const others = parsed.success
    ? []
    : fieldErrorsFromIssues(parsed.error.issues).filter((e) => !unread.some((p) => e.path === p || e.path.startsWith(`${p}.`)));
  throw new AppError("validation_failed", `config section '${name}' is invalid`, { errors: [...read.errors, ...others] });
}

function valueOfJson(text: string | undefined): unknown {
  try {
    return JSON.parse(text ?? "");
  } catch (err) {
    throw new AppError("validation_failed", "The section is not JSON", {
      errors: [{ path: "", message: err instanceof Error ? err.message : "not JSON" }],
    });
  }
}

/** The config sections in the console (issue 25 item 2; forms generated from their schemas, issue 37). */
export const consoleConfigRoutes = new Hono<ConsoleEnv>()
  .get(
    "/config",
    describe({ summary: "The config sections", responses: { 200: pageDoc("The config sections, by name") } }),
    html,
    requireConsole("viewer"),
    (c) => page(c, <ConfigListPage viewer={viewerOf(c)} sections={[...CONFIG_SECTIONS.keys()].sort()} />),
  )
  .get(
    "/config/:section",
    describe({
      summary: "A config section's page",
      responses: {
        200: pageDoc(
          "The section's effective value (`?saved=1`: with the note that it was saved), and (for an admin) a form generated from its schema with the stored values, and the whole section as JSON",
        ),
      },
      errors: ["not_found"],
    }),
    html,
    requireConsole("viewer"),
    validate("param", sectionParam),
    async (c) => {
      const name = c.req.valid("param").section;
      return sectionPage(c, getDb(c.env.DB), name, sectionOrThrow(name), { saved: c.req.query("saved") === "1" });
    },
  )
  .post(
    "/config/:section",
    describe({
      summary: "Save a config section (the section page's fields form, `form=fields`, or its whole section as `json`)",
      responses: {
        303: { description: "Saved: back to the section's page (`?saved=1`)" },
        409: pageDoc(
          "The section's precondition refused the value (`topology_evolution` while no approval channel works): the page with the problem",
        ),
        422: pageDoc(
          "A field that is not valid, or JSON that is not a valid section: the page with the draft, each message beside its field",
        ),
      },
      errors: ["not_found", "validation_failed", "approval_broker_unavailable"],
    }),
    html,
    requireConsole("admin"),
    validate("param", sectionParam),
    async (c) => {
      const name = c.req.valid("param").section;
      const section = sectionOrThrow(name);
      const db = getDb(c.env.DB);
      const form = await readForm(c);
      const fields = schemaFields(section.schema);
      const mode = form.form === "fields" ? "fields" : "json";
      try {
        const value = mode === "fields" ? valueOfFields(name, section, fields, form) : valueOfJson(form.json);
        await writeSection(db, section, value, c.var.session.principal.id, c.var.clock.now(), c.env);
      } catch (err) {
        if (!(err instanceof AppError) || err.status >= 500) throw err;
        const problem = formProblem(err)!;
        const refused: Refused =
          mode === "fields"
            ? { mode, draft: form, problem: { ...problem, fields: placeErrors(fields, err.errors ?? []) } }
            : { mode, draft: form.json ?? "", problem };
        return sectionPage(c, db, name, section, { refused }, problemStatus(err));
      }
      return c.redirect(`/console/config/${name}?saved=1`, 303);
    },
  );
