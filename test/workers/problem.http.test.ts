import { env } from "cloudflare:workers";
import { count } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { getDb } from "../../src/db/client";
import { credentials, events } from "../../src/db/schema";
import { call } from "../factories";

const rows = async () => {
  const db = getDb(env.DB);
  const [c] = await db.select({ n: count() }).from(credentials);
  const [e] = await db.select({ n: count() }).from(events);
  return { credentials: c!.n, events: e!.n };
};

describe("problem+json errors", () => {
  it("answers a schema violation with 422 validation_failed listing each bad field, and stores nothing", async () => {
    const before = await rows();
    const res = await call("/v1/admin/operators", { body: { name: "", role: "overlord" } });
    expect(res.status).toBe(422);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    expect(res.body).toMatchObject({
      type: expect.any(String),
      title: "Validation failed",
      status: 422,
      code: "validation_failed",
      detail: expect.any(String),
    });
    expect(res.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(["name", "role"]);
    expect(await rows()).toEqual(before);
  });

  it("answers malformed JSON with 400 malformed_request and errors[]", async () => {
    const res = await call("/v1/admin/runners", { rawBody: "{not json" });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("malformed_request");
    expect(res.body.errors).toHaveLength(1);
  });

  it("answers an unknown utility runtime with 422 naming the runtime field", async () => {
    const res = await call("/v1/admin/jobs", { body: { kind: "utility", runtime: "gpt-9", prompt: "hi" } });
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual([expect.objectContaining({ path: "runtime" })]);
  });

  it("carries the request id so a report can be matched to logs", async () => {
    const res = await call("/v1/admin/jobs/job_missing");
    expect(res.status).toBe(404);
    expect(res.body.request_id).toBe(res.headers.get("x-request-id"));
  });
});
