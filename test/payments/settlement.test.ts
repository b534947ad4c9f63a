import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { FIXTURE, upstreamRequests } from "../fixtures/upstream-requests";

// The Worker's side of x402 against a facilitator double (test/fixtures/facilitator-double.mjs)
// that lets each test choose the facilitator's answer. The real facilitator and chain are in
// test/e2e/x402.test.ts; these cases need outcomes a healthy chain does not produce on demand.
const paidEnv = {
  ...env,
  FREE_BETA: "false",
  FACILITATOR_URL: `${FIXTURE}/facilitator`,
  ADMIN_TOKEN: "admin-t-0123456789abcdefghij",
};
const app = createApp();
const payerEnding = (suffix: string) => `0x00000000000000000000000000000000000a${suffix}`;
const SETTLES_OK = payerEnding("0001");

const hex32 = () =>
  `0x${[...crypto.getRandomValues(new Uint8Array(32))].map((b) => b.toString(16).padStart(2, "0")).join("")}`;

function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  return app.fetch(
    new Request(`https://skills.test${path}`, { method: "POST", headers, body: JSON.stringify(body) }),
    paidEnv,
  );
}

async function paymentRequired(path: string) {
  const res = await post(path, {});
  expect(res.status).toBe(402);
  return decodePaymentRequiredHeader(res.headers.get("payment-required") as string);
}

async function signature(path: string, from: string, shape: "eip3009" | "permit2" | "both" = "eip3009") {
  const required = await paymentRequired(path);
  const accepted = required.accepts[0] as PaymentRequirements;
  const nonce = hex32();
  const window = { validAfter: "0", validBefore: String(Math.floor(Date.now() / 1000) + 600) };
  const payload: PaymentPayload = {
    x402Version: 2,
    resource: required.resource,
    accepted,
    payload:
      shape === "eip3009"
        ? {
            signature: `0x${"11".repeat(65)}`,
            authorization: { from, to: accepted.payTo, value: accepted.amount, nonce, ...window },
          }
        : shape === "permit2"
          ? { signature: `0x${"11".repeat(65)}`, permit2Authorization: { from, nonce, ...window } }
          : {
              // A Permit2 payment (what a facilitator would settle) with a decoy EIP-3009 part.
              signature: `0x${"11".repeat(65)}`,
              permit2Authorization: { from, nonce: hex32(), ...window },
              authorization: { from, to: accepted.payTo, value: accepted.amount, nonce, ...window },
            },
  };
  return {
    header: encodePaymentSignatureHeader(payload),
    payload,
    nonce,
    key: `${accepted.network}:${accepted.asset}:${from}:${nonce}`.toLowerCase(),
  };
}

const nonceRow = (key: string) =>
  env.DB.prepare("SELECT status FROM payment_nonces WHERE nonce = ?1").bind(key).first<{ status: string }>();
const ledgerRows = (key: string) =>
  env.DB.prepare("SELECT count(*) AS n FROM payments WHERE nonce = ?1").bind(key).first<{ n: number }>();

describe("x402 settlement: the Worker's side of every facilitator outcome", () => {
  it("a settled call answers the content, a PAYMENT-RESPONSE and one ledger row", async () => {
    const sig = await signature("/api/skills/sha256", SETTLES_OK);
    const res = await post("/api/skills/sha256", { text: "abc" }, { "payment-signature": sig.header });
    expect(res.status).toBe(200);
    expect(res.headers.get("payment-response")).toBeTruthy();
    expect((await res.json<{ hex: string }>()).hex).toMatch(/^ba7816bf/);
    expect(await nonceRow(sig.key)).toEqual({ status: "settled" });
    expect(await ledgerRows(sig.key)).toEqual({ n: 1 });
  });

  it("20 concurrent calls with one signature: one 200, nineteen refused by the D1 claim, one settlement", async () => {
    const sig = await signature("/api/skills/slugify", SETTLES_OK);
    const all = await Promise.all(
      Array.from({ length: 20 }, () =>
        post("/api/skills/slugify", { text: "Hello" }, { "payment-signature": sig.header }),
      ),
    );
    expect(all.filter((r) => r.status === 200)).toHaveLength(1);
    const refused = await Promise.all(
      all.filter((r) => r.status !== 200).map((r) => r.json<{ reason: string }>()),
    );
    expect(refused).toHaveLength(19);
    for (const r of refused) expect(r.reason).toBe("payment_authorization_reused");
    expect(await upstreamRequests(`facilitator-settle nonce=${sig.nonce}`)).toBe(1);
    // Replayed later (the double verifies anything, so only the D1 claim stands in the way).
    const replay = await post("/api/skills/slugify", { text: "Hello" }, { "payment-signature": sig.header });
    expect(replay.status).toBe(402);
    expect((await replay.json<{ reason: string }>()).reason).toBe("payment_authorization_reused");
    expect(await upstreamRequests(`facilitator-settle nonce=${sig.nonce}`)).toBe(1);
  });

  it.each([
    ["refused before sending", "0002", "insufficient_funds", /transfer amount exceeds balance.*not charged/],
  ])(
    "a settlement that definitely failed (%s) is a 402 with the reason, never the content; the authorization is free again",
    async (_name, suffix, reason, message) => {
      const sig = await signature("/api/skills/sha256", payerEnding(suffix));
      for (let attempt = 0; attempt < 2; attempt++) {
        const res = await post("/api/skills/sha256", { text: "abc" }, { "payment-signature": sig.header });
        expect(res.status).toBe(402);
        const body = await res.json<Record<string, unknown>>();
        expect(body.reason).toBe(reason);
        expect(String(body.error)).toMatch(message);
        expect(body).not.toHaveProperty("hex");
        expect(await nonceRow(sig.key)).toBeNull();
      }
      expect(await ledgerRows(sig.key)).toEqual({ n: 0 });
    },
  );

  it.each([
    ["a 200 with garbage", "0003"],
    ["a gateway's 502 page", "0005"],
    ["settlement_pending with a transaction", "0006"],
    ["settlement_pending, then the retry's nonce_already_used (the first transfer landed)", "0008"],
    ["transaction_failed with no transaction (the send threw after the node took it)", "0009"],
    ["settlement_pending, then the retry's own broadcast reverted (the first may still land)", "0010"],
    ["the same, both answers sent with HTTP error statuses (thrown as SettleErrors)", "0011"],
    ["transaction_failed naming a broadcast whose pending record was not stored", "0e12"],
    ["a mined revert (the authorization may have moved the money in another transaction)", "0007"],
  ])(
    "a settlement with no clear answer (%s) withholds the content, keeps the authorization reserved and says so",
    async (_name, suffix) => {
      const sig = await signature("/api/skills/sha256", payerEnding(suffix));
      const res = await post("/api/skills/sha256", { text: "abc" }, { "payment-signature": sig.header });
      expect(res.status).toBe(502);
      const body = await res.json<Record<string, unknown>>();
      expect(body).toMatchObject({
        reason: "settlement_unconfirmed",
        request_id: res.headers.get("x-request-id"),
      });
      expect(String(body.detail)).not.toMatch(/not charged/);
      expect(body).not.toHaveProperty("hex");
      expect(await nonceRow(sig.key)).toEqual({ status: "failed" });
      expect(await ledgerRows(sig.key)).toEqual({ n: 0 });
      // Listed for the maintainers' reconciliation against the chain.
      const admin = await app.fetch(
        new Request("https://skills.test/api/admin/payments", {
          headers: { authorization: "Bearer admin-t-0123456789abcdefghij" },
        }),
        paidEnv,
      );
      const { unconfirmed } = await admin.json<{ unconfirmed: { nonce: string; status: string }[] }>();
      expect(unconfirmed).toContainEqual(expect.objectContaining({ nonce: sig.key, status: "failed" }));
      const settles = await upstreamRequests(`facilitator-settle nonce=${sig.nonce}`);
      const again = await post("/api/skills/sha256", { text: "abc" }, { "payment-signature": sig.header });
      const refused = await again.json<{ reason: string; x402Version: number; accepts: unknown[] }>();
      expect(refused.reason).toBe("payment_authorization_reused");
      // Like every x402 402, the refusal carries the offer to sign again (v2 header, v1 body).
      expect(decodePaymentRequiredHeader(again.headers.get("payment-required") ?? "").accepts).toHaveLength(
        1,
      );
      expect(refused).toMatchObject({
        x402Version: 1,
        accepts: [expect.objectContaining({ scheme: "exact" })],
      });
      expect(await upstreamRequests(`facilitator-settle nonce=${sig.nonce}`)).toBe(settles);
    },
  );

  it("an invalid body and a failing handler are never settled, and free the authorization", async () => {
    const bad = await signature("/api/skills/sha256", SETTLES_OK);
    const res = await post("/api/skills/sha256", { text: 5 }, { "payment-signature": bad.header });
    expect(res.status).toBe(422);
    expect(await nonceRow(bad.key)).toBeNull();

    const failing = await signature("/api/skills/research", SETTLES_OK);
    const upstreamDown = await post(
      "/api/skills/research",
      { query: "upstream-failure settlement" },
      { "payment-signature": failing.header },
    );
    expect(upstreamDown.status).toBe(502);
    expect(await upstreamDown.json()).toMatchObject({ charged: false });
    expect(await nonceRow(failing.key)).toBeNull();
    for (const s of [bad, failing]) {
      expect(await upstreamRequests(`facilitator-settle nonce=${s.nonce}`)).toBe(0);
      expect(await ledgerRows(s.key)).toEqual({ n: 0 });
    }
  });

  it.each([
    ["Permit2", "permit2"],
    ["Permit2 with a decoy EIP-3009 authorization beside it", "both"],
  ] as const)(
    "a payload that is not exactly an EIP-3009 authorization (%s) is refused before the handler",
    async (_name, shape) => {
      const sig = await signature("/api/skills/sha256", SETTLES_OK, shape);
      const res = await post("/api/skills/sha256", { text: "abc" }, { "payment-signature": sig.header });
      expect(res.status).toBe(402);
      expect((await res.json<{ reason: string }>()).reason).toBe("unsupported_payment_payload");
      expect(await upstreamRequests(`facilitator-settle nonce=${sig.nonce}`)).toBe(0);
      expect(await nonceRow(sig.key)).toBeNull();
    },
  );

  it("a ledger write that fails never turns a paid answer into an error, and is retried after it", async () => {
    const payer = payerEnding("0004");
    await env.DB.prepare(
      `CREATE TRIGGER IF NOT EXISTS ledger_down BEFORE INSERT ON payments WHEN NEW.payer = '${payer}' BEGIN SELECT RAISE(ABORT, 'ledger unavailable'); END`,
    ).run();
    const ctx = createExecutionContext();
    try {
      const sig = await signature("/api/skills/sha256", payer);
      const req = new Request("https://skills.test/api/skills/sha256", {
        method: "POST",
        headers: { "payment-signature": sig.header },
        body: JSON.stringify({ text: "abc" }),
      });
      const res = await app.fetch(req, paidEnv, ctx);
      expect(res.status).toBe(200);
      expect(res.headers.get("payment-response")).toBeTruthy();
      expect((await res.json<{ hex: string }>()).hex).toMatch(/^ba7816bf/);
      // Until the ledger recovers, the authorization stays claimed: it cannot buy a second call.
      expect(await nonceRow(sig.key)).toEqual({ status: "running" });
      expect(await ledgerRows(sig.key)).toEqual({ n: 0 });
      await env.DB.prepare("DROP TRIGGER IF EXISTS ledger_down").run();
      await waitOnExecutionContext(ctx);
      expect(await ledgerRows(sig.key)).toEqual({ n: 1 });
      expect(await nonceRow(sig.key)).toEqual({ status: "settled" });
    } finally {
      await env.DB.prepare("DROP TRIGGER IF EXISTS ledger_down").run();
    }
  });

  it("an unconfirmed settlement whose claim mark fails is still the 502, and the mark is retried after it", async () => {
    const sig = await signature("/api/skills/sha256", payerEnding("0006"));
    await env.DB.prepare(
      `CREATE TRIGGER IF NOT EXISTS mark_down BEFORE UPDATE ON payment_nonces WHEN NEW.status = 'failed' AND NEW.nonce = '${sig.key}' BEGIN SELECT RAISE(ABORT, 'd1 blip'); END`,
    ).run();
    const ctx = createExecutionContext();
    try {
      const req = new Request("https://skills.test/api/skills/sha256", {
        method: "POST",
        headers: { "payment-signature": sig.header },
        body: JSON.stringify({ text: "abc" }),
      });
      const res = await app.fetch(req, paidEnv, ctx);
      expect(res.status).toBe(502);
      expect(await res.json()).toMatchObject({ reason: "settlement_unconfirmed" });
      expect(await nonceRow(sig.key)).toEqual({ status: "running" });
      await env.DB.prepare("DROP TRIGGER IF EXISTS mark_down").run();
      await waitOnExecutionContext(ctx);
      // 'failed' is what tells reconciliation the result was withheld (a landed payment is refunded).
      expect(await nonceRow(sig.key)).toEqual({ status: "failed" });
    } finally {
      await env.DB.prepare("DROP TRIGGER IF EXISTS mark_down").run();
    }
  });

  it("a client's own X-Request-Id never reaches the ledger", async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 2; i++) {
      const sig = await signature("/api/skills/sha256", SETTLES_OK);
      const res = await post(
        "/api/skills/sha256",
        { text: "abc" },
        { "payment-signature": sig.header, "x-request-id": "same-id-twice" },
      );
      expect(res.status).toBe(200);
      const row = await env.DB.prepare("SELECT request_id FROM payments WHERE nonce = ?1")
        .bind(sig.key)
        .first<{ request_id: string }>();
      expect(row?.request_id).toBe(res.headers.get("x-request-id"));
      ids.add(row?.request_id as string);
    }
    // Both paid calls are in the ledger, each under its own server-made id.
    expect(ids.size).toBe(2);
    expect(ids.has("same-id-twice")).toBe(false);
  });
});

describe("a payment pays only the route it names (issue 19.4)", () => {
  it("a signature made for json-sort, stripped of its extensions or naming another resource, does not pay for sha256", async () => {
    const sig = await signature("/api/skills/json-sort", SETTLES_OK);
    const stripped = { ...sig.payload, extensions: undefined };
    // (One with no resource at all is taken as made for the route it is sent to: x402 v2 makes
    // the field optional; payload-resource-optional.test.ts.)
    const sent = [stripped, { ...stripped, resource: {} }, { ...stripped, resource: { url: "x" } }];
    for (const payload of sent) {
      const res = await post(
        "/api/skills/sha256",
        { text: "abc" },
        { "payment-signature": encodePaymentSignatureHeader(payload as PaymentPayload) },
      );
      expect(res.status).toBe(402);
      expect((await res.json<{ reason: string }>()).reason).toBe("resource_mismatch");
      // The refusal still carries the offer for this route, so a client can sign the right one.
      expect(res.headers.get("payment-required")).toBeTruthy();
    }
    expect(await upstreamRequests(`facilitator-settle nonce=${sig.nonce}`)).toBe(0);
    expect(await nonceRow(sig.key)).toBeNull();
    // Sent where it was made for, the same signature pays.
    const right = await post(
      "/api/skills/json-sort",
      { data: { b: 1, a: 2 } },
      { "payment-signature": sig.header },
    );
    expect(right.status).toBe(200);
  });
});

describe("x402 v1 clients (X-PAYMENT) pay through the same path (issue 13.1)", () => {
  const v1Header = (payload: PaymentPayload, overrides: Record<string, unknown> = {}) =>
    btoa(
      JSON.stringify({
        x402Version: 1,
        scheme: "exact",
        network: "base",
        payload: payload.payload,
        ...overrides,
      }),
    );

  it("the 402 body is the v1 offer, the PAYMENT-REQUIRED header the v2 one", async () => {
    const res = await post("/api/skills/sha256", {});
    expect(res.status).toBe(402);
    const body = await res.json<{
      x402Version: number;
      accepts: Record<string, unknown>[];
      error: string;
      extensions: { bazaar: unknown };
    }>();
    const v2 = decodePaymentRequiredHeader(res.headers.get("payment-required") as string);
    expect(v2.x402Version).toBe(2);
    expect(body.x402Version).toBe(1);
    expect(body.accepts[0]).toMatchObject({
      scheme: "exact",
      network: "base",
      maxAmountRequired: "3000",
      resource: "https://skills.test/api/skills/sha256",
      payTo: v2.accepts[0]?.payTo,
      asset: v2.accepts[0]?.asset,
      maxTimeoutSeconds: 300,
      mimeType: "application/json",
      extra: { name: "USD Coin", version: "2" },
    });
    expect(body.extensions.bazaar).toBeTruthy();
    expect(body.error).toMatch(/^Payment required: this call costs \$0\.003/);
  });

  it("a v1 payment settles once, answers X-PAYMENT-RESPONSE with the v1 network name, and shares the nonce claim with v2", async () => {
    const sig = await signature("/api/skills/sha256", SETTLES_OK);
    const res = await post("/api/skills/sha256", { text: "abc" }, { "x-payment": v1Header(sig.payload) });
    expect(res.status).toBe(200);
    const v1Response = JSON.parse(atob(res.headers.get("x-payment-response") as string));
    expect(v1Response).toMatchObject({ success: true, network: "base", payer: SETTLES_OK });
    expect(res.headers.get("payment-response")).toBeTruthy();
    expect(await nonceRow(sig.key)).toEqual({ status: "settled" });
    expect(await ledgerRows(sig.key)).toEqual({ n: 1 });
    // The same authorization as v2, or again as v1: spent once whatever the version.
    const retries: Record<string, string>[] = [
      { "payment-signature": sig.header },
      { "x-payment": v1Header(sig.payload) },
    ];
    for (const headers of retries) {
      const again = await post("/api/skills/sha256", { text: "abc" }, headers);
      expect(again.status).toBe(402);
      expect((await again.json<{ reason: string }>()).reason).toBe("payment_authorization_reused");
    }
    expect(await upstreamRequests(`facilitator-settle nonce=${sig.nonce}`)).toBe(1);
  });

  it.each([
    ["a definite failure", "0002", 402, "insufficient_funds"],
    ["an unconfirmed settlement", "0006", 502, "settlement_pending"],
  ])(
    "%s answers a v1 payment with X-PAYMENT-RESPONSE too, the failed settle response under the v1 network name",
    async (_name, suffix, status, errorReason) => {
      const sig = await signature("/api/skills/sha256", payerEnding(suffix));
      const res = await post("/api/skills/sha256", { text: "abc" }, { "x-payment": v1Header(sig.payload) });
      expect(res.status).toBe(status);
      const v2 = JSON.parse(atob(res.headers.get("payment-response") as string));
      const v1 = JSON.parse(atob(res.headers.get("x-payment-response") ?? "bnVsbA=="));
      // transports-v1/http.md's failure: {success: false, errorReason, transaction, network: "base"}.
      expect(v1).toEqual({ ...v2, network: "base" });
      expect(v1).toMatchObject({ success: false, errorReason, payer: payerEnding(suffix) });
    },
  );

  it("a v1 payload for another network or scheme is a 402 with a snake_case reason, before any facilitator call", async () => {
    const sig = await signature("/api/skills/sha256", SETTLES_OK);
    for (const [overrides, reason] of [
      [{ network: "base-sepolia" }, "invalid_network"],
      [{ scheme: "upto" }, "unsupported_scheme"],
      [{ x402Version: 2 }, "invalid_x402_version"],
    ] as const) {
      const res = await post(
        "/api/skills/sha256",
        { text: "abc" },
        { "x-payment": v1Header(sig.payload, overrides) },
      );
      expect(res.status).toBe(402);
      expect((await res.json<{ reason: string }>()).reason).toBe(reason);
    }
    expect(await upstreamRequests(`facilitator-settle nonce=${sig.nonce}`)).toBe(0);
  });

  it.each([
    ["x-payment", "%%%"],
    ["payment-signature", "garbage"],
    ["payment-signature", btoa('{"x402Version":2}')],
  ])(
    "a %s header that is not a payment (%s) is refused as such, with the offer to sign again",
    async (name, value) => {
      const res = await post("/api/skills/sha256", { text: "abc" }, { [name]: value });
      expect(res.status).toBe(402);
      const body = await res.json<{ reason: string; x402Version: number; accepts: unknown[] }>();
      expect(body.reason).toBe("invalid_payment_header");
      // v1 clients read the offer from the body, v2 clients from PAYMENT-REQUIRED.
      expect(body.x402Version).toBe(1);
      expect(body.accepts.length).toBeGreaterThan(0);
      const required = decodePaymentRequiredHeader(res.headers.get("payment-required") as string);
      expect(required.accepts[0]?.amount).toBe("3000");
    },
  );

  it("a v1 payment with a bad body is a 422 and is not settled", async () => {
    const sig = await signature("/api/skills/sha256", SETTLES_OK);
    const res = await post("/api/skills/sha256", { text: 5 }, { "x-payment": v1Header(sig.payload) });
    expect(res.status).toBe(422);
    expect(await nonceRow(sig.key)).toBeNull();
    expect(await upstreamRequests(`facilitator-settle nonce=${sig.nonce}`)).toBe(0);
  });
});
