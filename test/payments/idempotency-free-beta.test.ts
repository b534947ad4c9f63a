import { env } from "cloudflare:test";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { callsLeft, keyWith } from "../fixtures/credits";
import { signedPayment } from "../fixtures/payments";
import { countingDb } from "../fixtures/rows-read";
import { FIXTURE } from "../fixtures/upstream-requests";

// In free beta the skills run unpaid, so an answer is never stored under an idempotency key: a free
// call carrying one (a card key's Idempotency-Key, or a payment id any throwaway key can sign)
// must cost no claim and release beside the call (D1 writes), only the read that finds a call paid
// before the beta began.
const app = createApp();
const betaEnv = { ...env, FREE_BETA: "true", FACILITATOR_URL: `${FIXTURE}/facilitator` };
const paidEnv = { ...betaEnv, FREE_BETA: "false" };
const sort = (headers: Record<string, string>, e: object) =>
  app.fetch(
    new Request("https://skills.test/api/skills/json-sort", {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify({ data: { b: 1, a: 2 } }),
    }),
    e,
  );

/** A free-beta json_sort call with `headers`, and the writes it sent about idempotency keys. */
async function keyWrites(headers: Record<string, string>) {
  const { db, seen } = countingDb(
    env.DB,
    (sql) => sql.includes("idempotent_results") && !sql.trimStart().startsWith("SELECT"),
  );
  const res = await sort(headers, { ...betaEnv, DB: db });
  expect(res.status).toBe(200);
  expect(res.headers.get("x-idempotent-replay")).toBeNull();
  await res.arrayBuffer();
  return seen.statements;
}

describe("a free-beta skill call under an idempotency key", () => {
  it("with a card key and an Idempotency-Key: no claim, no credit", async () => {
    const key = await keyWith(env.DB, 2, "json_sort");
    const headers = { authorization: `Bearer ${key}`, "idempotency-key": `beta-${crypto.randomUUID()}` };
    expect(await keyWrites(headers)).toBe(0);
    expect(await keyWrites(headers)).toBe(0);
    expect(await callsLeft(env.DB, key)).toBe(2);
  });

  it("with a payment id signed by a wallet that holds nothing: no claim", async () => {
    const offer = await sort({}, paidEnv);
    expect(offer.status).toBe(402);
    const required = decodePaymentRequiredHeader(offer.headers.get("payment-required") as string);
    const account = privateKeyToAccount(generatePrivateKey());
    const { payload } = await signedPayment(
      required,
      account,
      `beta_${crypto.randomUUID().replaceAll("-", "")}`,
    );
    expect(await keyWrites({ "payment-signature": encodePaymentSignatureHeader(payload) })).toBe(0);
  });

  it("a call paid before the beta began is still given back by its key during it", async () => {
    const key = await keyWith(env.DB, 2, "json_sort");
    const headers = { authorization: `Bearer ${key}`, "idempotency-key": `paid-${crypto.randomUUID()}` };
    const paid = await sort(headers, { ...paidEnv, X402_ENABLED: "false" });
    expect(paid.status).toBe(200);
    const body = await paid.text();
    const retry = await sort(headers, betaEnv);
    expect(retry.headers.get("x-idempotent-replay")).toBe("true");
    expect(retry.headers.get("x-original-request-id")).toBe(paid.headers.get("x-request-id"));
    expect(await retry.text()).toBe(body);
    expect(await callsLeft(env.DB, key)).toBe(1);
  });
});
