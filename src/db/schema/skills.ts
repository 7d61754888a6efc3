import { index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/**
 * Each employee's skills (seed 003 §5.1 step 5, §7 `skill_*` keys, §12.2 layer L3): named bodies of
 * know-how with trigger terms, switched on and off by an operator or by the close pipeline's
 * diagnose step, and measured by their lift on the prediction error. Skills are never deleted
 * (`retired` is the archive). src/evolution/skills.ts holds the rules.
 */
export const SKILL_STATES = ["inactive", "active", "retired"] as const;
export type SkillState = (typeof SKILL_STATES)[number];

export const employeeSkills = sqliteTable(
  "employee_skills",
  {
    employeeId: text("employee_id").notNull(),
    skillId: text("skill_id").notNull(),
    name: text("name").notNull(),
    description: text("description").notNull(),
    triggers: text("triggers", { mode: "json" }).$type<string[]>().notNull(),
    body: text("body").notNull(),
    state: text("state", { enum: SKILL_STATES }).notNull(),
    stateReason: text("state_reason"),
    stateSince: text("state_since").notNull(),
    /** When it last became active (the prompt's tie-break: the most recent activation first). */
    activatedAt: text("activated_at"),
    /** Closed conversations it was active in. */
    uses: integer("uses").notNull().default(0),
    /** The uses that had a baseline to compare with, and the sums the lift is taken from. */
    measuredUses: integer("measured_uses").notNull().default(0),
    errorSum: real("error_sum").notNull().default(0),
    baselineSum: real("baseline_sum").notNull().default(0),
    createdBy: text("created_by").notNull(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.employeeId, t.skillId] }),
    uniqueIndex("employee_skills_name_idx").on(t.employeeId, t.name),
    index("employee_skills_state_idx").on(t.employeeId, t.state),
  ],
);
export type EmployeeSkillRow = typeof employeeSkills.$inferSelect;
