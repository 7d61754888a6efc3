import { describe, expect, it } from "vitest";
import { call } from "../../factories";

// Registration is public: a webhook_url that is not a URL at all is the caller's mistake (422 naming
// the field), never a 500, and registers nothing.

const BAD = ["http://[::1", "not a url", "https://"];

describe("registering with a webhook_url that does not parse", () => {
  it("answers 422 validation_failed on POST /v1/nodes and registers no node", async () => {
    for (const webhook_url of BAD) {
      const res = await call("/v1/nodes", { token: null, body: { name: "hooked", model_tier: 3, webhook_url } });
      expect([res.status, res.body.code, res.body.errors?.map((e: { path: string }) => e.path)], webhook_url).toEqual([
        422,
        "validation_failed",
        ["webhook_url"],
      ]);
    }
    expect((await call("/v1/events?type=node.registered")).body.events).toEqual([]);
  });

  it("answers 422 validation_failed on POST /a2a/hello", async () => {
    for (const webhook_url of BAD) {
      const res = await call("/a2a/hello", {
        token: null,
        body: {
          protocol: "gep-a2a",
          protocol_version: "1.0.0",
          message_type: "hello",
          message_id: "msg-1",
          sender_id: "evomap-client-1",
          timestamp: new Date().toISOString(),
          payload: { model: "claude-sonnet-4", webhook_url },
        },
      });
      expect([res.status, res.body.code], webhook_url).toEqual([422, "validation_failed"]);
    }
    expect((await call("/v1/events?type=node.registered")).body.events).toEqual([]);
  });
});
