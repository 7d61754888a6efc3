import { describe, expect, it } from "vitest";
import * as z from "zod";
import { formValues, placeErrors, schemaFields, valueFromForm, type SchemaField } from "../../../src/console/schema-form";
import { approvalsConfig } from "../../../src/approvals/config";
import { evolutionConfig } from "../../../src/evolution/config";
import { runnerConfig } from "../../../src/jobs/config";
import { teamConfig } from "../../../src/team/config";
import { CONFIG_SECTIONS } from "../../../src/workers/config-sections";

const schema = z.object({
  enabled: z.boolean().default(false),
  tries: z.number().int().min(1).max(10).default(3),
  ratio: z.number().min(0).max(1).default(0.5),
  mode: z.enum(["fast", "safe"]).default("safe"),
  name: z.string().max(20).optional().describe("What to call it"),
  terms: z.array(z.string().min(3)).default(["alpha"]),
  url: z.url().nullable().default(null),
  nested: z.object({ on: z.boolean().optional(), depth: z.number().int().default(2) }).prefault({}),
  table: z.record(z.string(), z.number()).default({}),
  either: z.union([z.string(), z.number()]).optional(),
  items: z.array(z.object({ a: z.number() })).default([]),
});
const fields = schemaFields(schema);
const byPath = (path: string) => fields.find((f) => f.path === path)!;

describe("schemaFields", () => {
  it("derives one field per leaf, nested objects by dotted path, the rest as JSON", () => {
    expect(fields.map((f) => [f.path, f.kind])).toEqual([
      ["enabled", "boolean"],
      ["tries", "integer"],
      ["ratio", "number"],
      ["mode", "enum"],
      ["name", "string"],
      ["terms", "lines"],
      ["url", "string"],
      ["nested.on", "boolean"],
      ["nested.depth", "integer"],
      ["table", "json"],
      ["either", "json"],
      ["items", "json"],
    ]);
  });

  it("keeps bounds, options, defaults, descriptions, and which keys may stay unset or be null", () => {
    expect(byPath("tries")).toMatchObject({ min: 1, max: 10, default: 3, optional: false });
    expect(byPath("mode")).toMatchObject({ options: ["fast", "safe"], default: "safe" });
    expect(byPath("name")).toMatchObject({ optional: true, description: "What to call it", maxLength: 20 });
    expect(byPath("url")).toMatchObject({ nullable: true, url: true, default: null });
    expect(byPath("nested.on")).toMatchObject({ optional: true });
  });

  it("derives a form for every registered section without throwing", () => {
    for (const [name, section] of CONFIG_SECTIONS) expect(schemaFields(section.schema).length, name).toBeGreaterThan(0);
    expect(schemaFields(runnerConfig.schema).every((f) => f.kind === "integer")).toBe(true);
    expect(schemaFields(evolutionConfig.schema).map((f) => f.path)).toContain("noise_band.cases");
    expect(schemaFields(teamConfig.schema).map((f) => f.path)).toContain("roles.planner.model");
  });
});

describe("valueFromForm and formValues", () => {
  it("reads checkboxes absent as false, numbers as numbers, lines as a list, JSON as JSON", () => {
    const { value, errors } = valueFromForm(fields, {
      tries: "4",
      ratio: " 0.25 ",
      mode: "fast",
      name: "",
      terms: "alpha\n\n  beta \r\ngamma",
      url: "",
      "nested.on": "true",
      "nested.depth": "",
      table: '{"a": 1}',
      either: "",
      items: "[]",
    });
    expect(errors).toEqual([]);
    expect(value).toEqual({
      enabled: false,
      tries: 4,
      ratio: 0.25,
      mode: "fast",
      terms: ["alpha", "beta", "gamma"],
      url: null,
      nested: { on: true },
      table: { a: 1 },
      items: [],
    });
    expect(schema.strict().parse(value)).toMatchObject({ nested: { on: true, depth: 2 } });
  });

  it("leaves an optional list with no default unset when its field is empty, and a defaulted one empty", () => {
    const lists = z.object({ tools: z.array(z.string()).optional(), words: z.array(z.string()).default(["x"]) });
    const listFields = schemaFields(lists);
    expect(valueFromForm(listFields, { tools: " ", words: "" }).value).toEqual({ words: [] });
    expect(valueFromForm(listFields, { tools: "Read", words: "a" }).value).toEqual({ tools: ["Read"], words: ["a"] });
  });

  it("round-trips a section's value through its form", () => {
    const value = schema.parse({ enabled: true, name: "box", terms: ["one", "two"], url: "https://x.test/", table: { b: 2 }, either: 5 });
    const strings = formValues(fields, value);
    expect(strings.enabled).toBe("on");
    expect(strings["nested.on"]).toBeUndefined();
    expect(schema.strict().parse(valueFromForm(fields, strings).value)).toEqual(value);
    const runner = runnerConfig.schema.parse({ max_attempts: 7 });
    const runnerFields = schemaFields(runnerConfig.schema);
    expect(valueFromForm(runnerFields, formValues(runnerFields, runner)).value).toEqual(runner);
  });

  it("leaves a group out when all its inputs are empty, so it takes its default or stays unset", () => {
    const approvals = schemaFields(approvalsConfig.schema);
    const { value } = valueFromForm(approvals, { "webhook.url": "" });
    expect(value).toEqual({ slack: { enabled: false }, webhook: { enabled: false, url: null } });
    const team = schemaFields(teamConfig.schema);
    expect(valueFromForm(team, {}).value).toEqual({});
  });

  it("passes text that is not a number on for the schema to name, and reports JSON that does not parse", () => {
    const { value, errors } = valueFromForm(fields, { tries: "three", table: "{" });
    expect(value.tries).toBe("three");
    expect(errors).toEqual([{ path: "table", message: expect.stringMatching(/^not JSON: /) }]);
    const issues = schema.safeParse(value);
    expect(issues.success).toBe(false);
  });
});

describe("placeErrors", () => {
  const some: SchemaField[] = schemaFields(schema);
  it("puts each message on its field, below-field paths on the nearest field, the rest on the form", () => {
    expect(
      placeErrors(some, [
        { path: "tries", message: "Too big" },
        { path: "table.a", message: "expected number" },
        { path: "bogus", message: 'Unrecognized key: "bogus"' },
        { path: "", message: "whole" },
      ]),
    ).toEqual({
      tries: ["Too big"],
      table: ["a: expected number"],
      "": ['bogus: Unrecognized key: "bogus"', "whole"],
    });
  });
});
