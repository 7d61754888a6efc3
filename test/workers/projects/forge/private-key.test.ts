import { describe, expect, it } from "vitest";
import { AppError } from "../../../../src/lib/errors";
import { pkcs1ToPkcs8Der, toPkcs8Pem } from "../../../../src/projects/forge/private-key";
import { appKeys } from "../../../factories/github-standin";

const der = (pem: string) => Uint8Array.from(atob(pem.replace(/-----[A-Z ]+-----/g, "").replace(/\s+/g, "")), (c) => c.charCodeAt(0));

describe("GitHub App private key (PKCS#1 → PKCS#8 for WebCrypto)", () => {
  it("converts the PKCS#1 key GitHub issues into exactly the PKCS#8 key WebCrypto exports for it", async () => {
    const keys = await appKeys();
    expect(keys.privateKeyPem.startsWith("-----BEGIN RSA PRIVATE KEY-----\n")).toBe(true);

    expect(toPkcs8Pem(keys.privateKeyPem)).toBe(keys.pkcs8Pem);
  });

  it("yields a key workerd's WebCrypto imports and whose signatures the public key verifies", async () => {
    const keys = await appKeys();
    const algorithm = { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" };
    const key = await crypto.subtle.importKey("pkcs8", der(toPkcs8Pem(keys.privateKeyPem)), algorithm, false, ["sign"]);
    const data = new TextEncoder().encode("header.payload");
    const signature = await crypto.subtle.sign("RSASSA-PKCS1-v1_5", key, data);
    expect(await crypto.subtle.verify("RSASSA-PKCS1-v1_5", keys.publicKey, signature, data)).toBe(true);
  });

  it("accepts the key with escaped newlines, CRLF line ends or as PKCS#8 already", async () => {
    const keys = await appKeys();
    expect(toPkcs8Pem(keys.privateKeyPem.replace(/\n/g, "\\n"))).toBe(keys.pkcs8Pem);
    expect(toPkcs8Pem(keys.privateKeyPem.replace(/\n/g, "\r\n"))).toBe(keys.pkcs8Pem);
    expect(toPkcs8Pem(`  ${keys.pkcs8Pem}\n\n`)).toBe(keys.pkcs8Pem);
  });

  it("encodes short and long DER lengths the way DER requires", () => {
    const wrap = (n: number) => Array.from(pkcs1ToPkcs8Der(new Uint8Array(n)).slice(0, 4));
    // content = 3 (version) + 15 (algorithm) + octet string header + n
    expect(wrap(100)).toEqual([0x30, 3 + 15 + 2 + 100, 0x02, 0x01]);
    expect(Array.from(pkcs1ToPkcs8Der(new Uint8Array(200)).slice(0, 3))).toEqual([0x30, 0x81, 3 + 15 + 3 + 200]);
    const big = pkcs1ToPkcs8Der(new Uint8Array(1190));
    expect(Array.from(big.slice(0, 4))).toEqual([0x30, 0x82, 0x04, 0xbc]); // 3 + 15 + 4 + 1190 = 1212 = 0x4bc
    expect(Array.from(big.slice(18 + 4, 18 + 4 + 4))).toEqual([0x04, 0x82, 0x04, 0xa6]); // 1190
  });

  it.each([
    [
      "an OpenSSH key",
      "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n-----END OPENSSH PRIVATE KEY-----",
      /'OPENSSH PRIVATE KEY' keys are not supported/,
    ],
    [
      "an encrypted key",
      "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\nAAAA\n-----END RSA PRIVATE KEY-----",
      /encrypted/,
    ],
    ["text that is no PEM", "not a key at all", /expected one PEM block/],
    ["a PEM body that is not base64", "-----BEGIN RSA PRIVATE KEY-----\nnot*base64!\n-----END RSA PRIVATE KEY-----", /not base64/],
  ])("refuses %s with 503 unavailable, without quoting the key", (_what, key, expected) => {
    let err: unknown;
    try {
      toPkcs8Pem(key);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe("unavailable");
    expect((err as AppError).detail).toMatch(expected);
    expect((err as AppError).detail).not.toContain(key.split("\n")[1]);
  });
});

describe("why the conversion is needed", () => {
  it("is refused as PKCS#1 by the JWT library under workerd (the WebCrypto build a deployed Worker bundles too)", async () => {
    const { default: githubAppJwt } = await import("universal-github-app-jwt");
    const keys = await appKeys();
    await expect(githubAppJwt({ id: 1, privateKey: keys.privateKeyPem })).rejects.toThrow(/PKCS#1 format, but only PKCS#8 is supported/);
    await expect(githubAppJwt({ id: 1, privateKey: toPkcs8Pem(keys.privateKeyPem) })).resolves.toMatchObject({ appId: 1 });
  });
});
