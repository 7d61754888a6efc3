/**
 * Entry point of the crewplane MCP server (stdio), started by a member's CLI through its MCP config.
 * The member's identity file comes from CREWPLANE_MEMBER_CONFIG; nothing else identifies the caller.
 * A bad or missing identity exits 1, so the CLI reports the server as failed and the stage fails.
 */
import { readFileSync } from "node:fs";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { MEMBER_CONFIG_ENV } from "../members/scaffold.ts";
import { createCrewplaneMcpServer, memberConfigSchema } from "./server.ts";

function loadIdentity(): ReturnType<typeof memberConfigSchema.parse> {
  const path = process.env[MEMBER_CONFIG_ENV];
  if (!path) throw new Error(`${MEMBER_CONFIG_ENV} is not set`);
  const parsed = memberConfigSchema.safeParse(JSON.parse(readFileSync(path, "utf8")));
  if (!parsed.success)
    throw new Error(
      `${path} is not a valid member config: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
    );
  return parsed.data;
}

async function main(): Promise<void> {
  const identity = loadIdentity();
  const server = createCrewplaneMcpServer(identity);
  await server.connect(new StdioServerTransport());
  // The CLI ends the session by closing our stdin.
  process.stdin.on("end", () => void server.close().finally(() => process.exit(0)));
}

main().catch((err: unknown) => {
  process.stderr.write(`crewplane-mcp: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
