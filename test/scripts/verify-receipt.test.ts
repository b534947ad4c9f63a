import { execFile } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { CompactSign, importJWK, type JWK } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error plain JS helper shared with scripts/verify-receipt.mjs
import { checkIssuer, verifyReceipt } from "../../scripts/lib/receipt-verify.mjs";

// scripts/verify-receipt.mjs against a did:web server of its own on loopback: a key is good only
// for receipts of its own host (offer-receipt spec §4.5.1), not for whatever resourceUrl it signs.
const root = path.resolve(import.meta.dirname, "../..");
const body = new TextEncoder().encode('{"hex":"ba7816bf"}');
const bodySha256 = Buffer.from(await crypto.subtle.digest("SHA-256", body)).toString("hex");
const { privateKey } = generateKeyPairSync("ed25519");
const privateJwk = privateKey.export({ format: "jwk" }) as JWK;
const publicJwk = { kty: "OKP", crv: "Ed25519", x: privateJwk.x };

let server: Server;
let origin: string; // http://127.0.0.1:<port>
let did: string; // did:web:127.0.0.1%3A<port>
beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url !== "/.well-known/did.json") return res.writeHead(404).end();
    res.writeHead(200, { "content-type": "application/did+json" });
    res.end(
      JSON.stringify({
        id: did,
        verificationMethod: [
          { id: `${did}#k1`, type: "JsonWebKey2020", controller: did, publicKeyJwk: publicJwk },
        ],
        assertionMethod: [`${did}#k1`],
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  origin = `http://127.0.0.1:${port}`;
  did = `did:web:127.0.0.1%3A${port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** A receipt for `resourceUrl` signed by the loopback server's key. */
async function receipt(resourceUrl: string) {
  const claims = {
    version: 1,
    network: "eip155:8453",
    resourceUrl,
    payer: "0x0000000000000000000000000000000000000001",
    issuedAt: Math.floor(Date.now() / 1000),
    requestId: "r1",
    resource: "sha256",
    paymentMethod: "x402",
    status: 200,
    contentType: "application/json",
    bodySha256,
  };
  return new CompactSign(new TextEncoder().encode(JSON.stringify(claims)))
    .setProtectedHeader({ alg: "EdDSA", kid: `${did}#k1` })
    .sign(await importJWK(privateJwk, "EdDSA"));
}

/** The CLI on saved files, as the docs show it: exit code and its JSON answer. */
async function cli(jws: string, ...args: string[]) {
  const dir = mkdtempSync(path.join(os.tmpdir(), "verify-receipt-"));
  writeFileSync(path.join(dir, "headers.txt"), `HTTP/1.1 200 OK\nx-payment-receipt: ${jws}\n`);
  writeFileSync(path.join(dir, "body.json"), body);
  return promisify(execFile)(
    process.execPath,
    [
      path.join(root, "scripts/verify-receipt.mjs"),
      path.join(dir, "headers.txt"),
      "--body",
      path.join(dir, "body.json"),
      ...args,
    ],
    { cwd: root },
  ).then(
    (r) => ({ code: 0, out: JSON.parse(r.stdout) }),
    (e: { code: number; stdout: string }) => ({ code: e.code, out: JSON.parse(e.stdout || "{}") }),
  );
}

describe("verify-receipt: the signing key must be the resource's", () => {
  it("a receipt for our URL signed with someone else's did:web is not valid", async () => {
    const forged = await receipt("https://skills.example/api/skills/sha256");
    const { code, out } = await cli(forged);
    expect(code).toBe(1);
    expect(out).toMatchObject({
      valid: false,
      reason: expect.stringMatching(
        /signed by did:web:127\.0\.0\.1%3A\d+, which is not did:web:skills\.example/,
      ),
    });
    // The library refuses it too, once it knows which did the key came from.
    await expect(verifyReceipt(forged, { jwk: publicJwk, body, did })).rejects.toThrow(/not authorised/);
  });

  it("a receipt for the signer's own host is valid, with and without --base-url", async () => {
    const own = await receipt(`${origin}/api/skills/sha256`);
    const found = await cli(own);
    expect(found.code).toBe(0);
    expect(found.out).toMatchObject({ valid: true, body_checked: true, key: `${did}#k1` });
    expect((await cli(own, "--base-url", origin)).code).toBe(0);
  });

  it("with --base-url, a receipt for a resource outside that base URL is not valid", async () => {
    const elsewhere = await receipt("https://skills.example/api/skills/sha256");
    const { code, out } = await cli(elsewhere, "--base-url", origin);
    expect(code).toBe(1);
    expect(out.reason).toMatch(/not for a resource of http:\/\/127\.0\.0\.1:\d+/);
  });

  it("the did:web of the origin (port as %3A, host in lower case) or of a path above the resource", () => {
    const claims = (resourceUrl: string) => ({ resourceUrl });
    expect(() => checkIssuer("did:web:skills.example", claims("https://Skills.Example/api/x"))).not.toThrow();
    expect(() =>
      checkIssuer("did:web:skills.example%3A8443", claims("https://skills.example:8443/api/x")),
    ).not.toThrow();
    expect(() =>
      checkIssuer("did:web:skills.example", claims("https://skills.example:8443/api/x")),
    ).toThrow();
    expect(() => checkIssuer("did:web:SKILLS.example", claims("https://skills.example/api/x"))).toThrow();
    expect(() => checkIssuer("did:web:evil.example", claims("https://skills.example/api/x"))).toThrow();
    // A deployment under a path (BASE_URL https://host/market) signs as did:web:host:market.
    expect(() =>
      checkIssuer("did:web:host.example:market", claims("https://host.example/market/api/x")),
    ).not.toThrow();
    expect(() =>
      checkIssuer("did:web:host.example:market", claims("https://host.example/other/x")),
    ).toThrow();
    expect(() => checkIssuer("did:web:host.example", {})).toThrow(/no resourceUrl/);
  });
});
