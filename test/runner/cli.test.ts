import { homedir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseCli } from "../../local-runner/src/cli.ts";
import { UsageError } from "../../local-runner/src/errors.ts";

const run = (argv: string[], env: NodeJS.ProcessEnv = {}) => {
  const parsed = parseCli(argv, env);
  if (parsed.command !== "run") throw new Error("expected the run command");
  return parsed.options;
};

describe("parseCli", () => {
  it("reads flags into typed options with defaults", () => {
    expect(run(["--url", "http://127.0.0.1:8787/", "--token", "t1"])).toEqual({
      url: "http://127.0.0.1:8787",
      token: "t1",
      tokenSource: "flag",
      home: join(homedir(), ".crewplane"),
      concurrency: 2,
    });
  });

  it("falls back to the CREWPLANE_* environment variables", () => {
    const env = {
      CREWPLANE_URL: "https://cp.example",
      CREWPLANE_RUNNER_TOKEN: "env-token",
      CREWPLANE_HOME: "/srv/cp",
      CREWPLANE_CONCURRENCY: "4",
    };
    expect(run([], env)).toEqual({ url: "https://cp.example", token: "env-token", tokenSource: "env", home: "/srv/cp", concurrency: 4 });
  });

  it("lets flags win over the environment and restricts runtimes", () => {
    const options = run(["--url", "http://a", "--token", "flag", "--concurrency", "1", "--runtimes", "offline, claude,offline"], {
      CREWPLANE_RUNNER_TOKEN: "env",
      CREWPLANE_CONCURRENCY: "9",
    });
    expect(options).toMatchObject({ token: "flag", tokenSource: "flag", concurrency: 1, runtimes: ["offline", "claude"] });
  });

  it("treats an empty CREWPLANE_* variable as unset, so an empty CREWPLANE_HOME never puts the runner's state in the cwd", () => {
    const env = { CREWPLANE_URL: "", CREWPLANE_RUNNER_TOKEN: "env-token", CREWPLANE_HOME: "", CREWPLANE_CONCURRENCY: "" };
    expect(run(["--url", "http://a"], env)).toMatchObject({ home: join(homedir(), ".crewplane"), concurrency: 2 });
    expect(() => parseCli([], env)).toThrow(/missing --url/);
  });

  it("normalizes the URL it was given, so surrounding spaces never reach the request URLs", () => {
    expect(run(["--url", " http://127.0.0.1:8787/ ", "--token", "t"]).url).toBe("http://127.0.0.1:8787");
    expect(run(["--url", "https://cp.example/base//", "--token", "t"]).url).toBe("https://cp.example/base");
  });

  it("returns the help command for --help", () => {
    expect(parseCli(["--help"], {})).toEqual({ command: "help" });
  });

  it.each([
    [["--token", "t"], /missing --url/],
    [["--url", "http://a"], /missing CREWPLANE_RUNNER_TOKEN/],
    [["--url", "ftp://a", "--token", "t"], /http/],
    [["--url", "http://a", "--token", "t", "--concurrency", "0"], /concurrency/],
    [["--url", "http://a", "--token", "t", "--concurrency", "2.5"], /concurrency/],
    [["--url", "http://a", "--token", "t", "--runtimes", "offline,gpt"], /unknown runtime/],
    [["--url", "http://a", "--token", "t", "--bogus"], /bogus/],
    [["--url", "http://a/?x=1", "--token", "t"], /query|fragment/],
    [["--url", "http://a/#top", "--token", "t"], /query|fragment/],
    [["--url", "http://me:pw@a/", "--token", "t"], /credentials/],
    [["--url", "http://a", "--token", "t", "--home", ""], /--home/],
    [["--url", "http://a", "--token", "t", "extra"], /extra|positional/i],
  ])("rejects %j with a usage error", (argv, message) => {
    expect(() => parseCli(argv, {})).toThrow(UsageError);
    expect(() => parseCli(argv, {})).toThrow(message);
  });
});
