import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { AppError } from "../../../../src/lib/errors";
import { Redactor, redactShapes } from "../../../../src/projects/forge/redact";
import { githubWorld, ORG, type GithubStandin } from "../../../factories/github-standin";
import type { AppKeys } from "../../../factories/github-standin/app-keys";

/**
 * No token or secret reaches a return value, an error (message, detail, internal message, stack,
 * problem body) or a log line, even when GitHub (here: the stand-in, behaving badly on purpose)
 * echoes the request's Authorization header back in its answer.
 */

let logged: string[] = [];
beforeEach(() => {
  logged = [];
  for (const level of ["log", "info", "warn", "error", "debug"] as const) {
    vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
      logged.push(
        args.map((a) => (a instanceof Error ? `${a.message}\n${a.stack}` : typeof a === "string" ? a : JSON.stringify(a))).join(" "),
      );
    });
  }
});
afterEach(() => vi.restoreAllMocks());

/** Every secret of the scenario: the key (both PEM forms and their lines), each JWT and token. */
function secretsOf(standin: GithubStandin, keys: AppKeys, jwts: string[]): string[] {
  const keyLines = [keys.privateKeyPem, keys.pkcs8Pem].flatMap((pem) =>
    pem.split("\n").filter((l) => l.length > 20 && !l.startsWith("-----")),
  );
  return [keys.privateKeyPem, keys.pkcs8Pem, ...keyLines, ...jwts, ...standin.tokens.keys()];
}

function expectNoSecret(text: string, secrets: string[]) {
  expect(secrets.length).toBeGreaterThan(3);
  for (const secret of secrets) expect(text.includes(secret), `secret leaked: ${secret.slice(0, 12)}…`).toBe(false);
}

function everythingAbout(err: AppError): string {
  return [
    err.message,
    err.detail,
    err.internalMessage ?? "",
    String(err.stack),
    JSON.stringify(err),
    JSON.stringify(err.toProblem("req-1")),
    String(err.cause ?? ""),
  ].join("\n");
}

/** A world whose stand-in records the JWTs it receives and echoes credentials in `operation`'s answer. */
async function echoingWorld(answer: (authorization: string) => Response | never) {
  const world = await githubWorld();
  const jwts: string[] = [];
  world.standin.intercept("POST /app/installations/{installation_id}/access_tokens", ({ request }) => {
    jwts.push(request.headers.get("authorization")!.replace(/^bearer /i, ""));
  });
  world.standin.intercept("POST /repos/{owner}/{repo}/git/commits", ({ request }) => answer(request.headers.get("authorization")!));
  await world.forge.ensureRepository({ name: "demo" });
  return { ...world, jwts };
}

const contribution = {
  repo: "demo",
  task_id: "task_1",
  message: "feat: x",
  files: [{ path: "a.txt", content: "a" }],
  attribution: { node_id: "node_a0c28b601d3a6d49", project: "demo", council_session_id: "delib_1" },
};

describe("forge redaction", () => {
  it("keeps the installation token out of the error when GitHub echoes it in a 500 answer", async () => {
    const { standin, forge, keys, jwts } = await echoingWorld(
      (authorization) =>
        new Response(JSON.stringify({ message: `Server Error (you sent ${authorization})`, echoed: { authorization } }), {
          status: 500,
          headers: { "content-type": "application/json", "x-echo": authorization },
        }),
    );

    const err = (await forge.contribute(contribution).catch((e: unknown) => e)) as AppError;

    expect(err).toBeInstanceOf(AppError);
    expect(err.code).toBe("forge_failed");
    expect(err.status).toBe(502);
    expect(err.detail).toBe("GitHub answered 500 to POST /repos/{owner}/{repo}/git/commits");
    expect(err.internalMessage).toBe("Server Error (you sent token [REDACTED])");
    expect(err.cause).toBeUndefined();
    expect(standin.tokens.size).toBe(1);
    const secrets = secretsOf(standin, keys, jwts);
    expectNoSecret(everythingAbout(err), secrets);
    expectNoSecret(logged.join("\n"), secrets);
  });

  it("keeps credentials out of the error when the connection itself fails with them in the message", async () => {
    const { standin, forge, keys, jwts } = await echoingWorld((authorization) => {
      throw new TypeError(`network connection lost while sending Authorization: ${authorization}`);
    });

    const err = (await forge.contribute(contribution).catch((e: unknown) => e)) as AppError;

    expect(err.code).toBe("forge_failed");
    expect(err.detail).toBe("GitHub could not be reached for POST /repos/{owner}/{repo}/git/commits");
    expect(err.internalMessage).toContain("[REDACTED]");
    expectNoSecret(everythingAbout(err), secretsOf(standin, keys, jwts));
  });

  it("redacts the credential from the deprecation warning Octokit logs when GitHub's notice echoes it", async () => {
    const world = await githubWorld();
    world.standin.intercept("POST /orgs/{org}/repos", ({ request }) => ({
      headers: {
        deprecation: "true",
        sunset: "Tue, 01 Jan 2030 00:00:00 GMT",
        link: `<https://docs.github.com/changes?${request.headers.get("authorization")!.replace(/^token /, "access_token=")}&seen=${request.headers.get("authorization")!.replace(" ", "_")}>; rel="deprecation"`,
      },
    }));

    const repo = await world.forge.ensureRepository({ name: "demo" });

    expect(repo.created).toBe(true);
    const warning = logged.find((line) => line.includes("is deprecated"));
    expect(warning).toMatch(
      /^forge: \[@octokit\/request\] "POST https:\/\/api\.github\.com\/orgs\/crewplane-projects\/repos" is deprecated\..*access_token=\[REDACTED\]/,
    );
    expectNoSecret(logged.join("\n"), secretsOf(world.standin, world.keys, []));
  });

  it("returns no credential in any result of a whole project's work", async () => {
    const world = await githubWorld();
    const jwts: string[] = [];
    world.standin.intercept("POST /app/installations/{installation_id}/access_tokens", ({ request }) => {
      jwts.push(request.headers.get("authorization")!.replace(/^bearer /i, ""));
    });
    const results = [
      await world.forge.ensureRepository({ name: "demo" }),
      await world.forge.contribute(contribution),
      await world.forge.openPullRequest({ repo: "demo", branch: "task/task_1", title: "t" }),
    ];
    expectNoSecret(JSON.stringify(results), secretsOf(world.standin, world.keys, jwts));
    expectNoSecret(logged.join("\n"), secretsOf(world.standin, world.keys, jwts));
    expect(String(world.forge.org)).toBe(ORG);
    world.standin.assertClean();
  });
});

describe("Redactor", () => {
  it("removes secrets it was given and anything shaped like a credential", () => {
    const r = new Redactor();
    r.add("s3cret-value-123");
    r.addAuthorization("token v1.abcdef0123456789");
    const text = [
      "a s3cret-value-123 b",
      "v1.abcdef0123456789",
      "ghs_16C7e42F292c6912E7710c838347Ae178B4a",
      "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
      "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOjF9.c2lnbmF0dXJl",
      "Authorization: Bearer abcdefgh12345678",
      "https://x/?access_token=abc123&x=1",
      "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
    ].join("\n");
    expect(r.redact(text)).toBe(
      [
        "a [REDACTED] b",
        "[REDACTED]",
        "[REDACTED]",
        "[REDACTED]",
        "[REDACTED]",
        "Authorization: Bearer [REDACTED]",
        "https://x/?access_token=[REDACTED]&x=1",
        "[REDACTED KEY]",
      ].join("\n"),
    );
  });

  it("removes a PEM block even when it is cut off", () => {
    expect(redactShapes("key: -----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC")).toBe("key: [REDACTED KEY]");
  });
});
