import { env } from "cloudflare:test";
import type { PaymentRequired } from "@x402/core/types";
import { privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { signedPayment } from "../fixtures/payments";
import { FIXTURE } from "../fixtures/upstream-requests";
import { mcpCall } from "../helpers";

// The facilitator double (test/fixtures/facilitator-double.mjs) answers a settle as the payer's
// last digits ask, and only for a payer a test made up (32 leading zeros). It used to read any
// address so: a wallet from generatePrivateKey() ends in one of its suffixes once in ~7,300, and
// the tests that pay from one (test/mcp/receipts.test.ts's x402 case, which failed so once) got a
// refusal or a 502 they never asked for.
const paidEnv = { ...env, FREE_BETA: "false", FACILITATOR_URL: `${FIXTURE}/facilitator` };
const app = createApp();

/** A key found by trying random ones: its address ends in …0002, the double's insufficient_funds. */
const ENDS_IN_0002 = privateKeyToAccount(
  "0xeec3c6266c26bf275eb2f6ce841bfba931be0131c66db9706953a55ed9dcf165",
);
const SUFFIXES = ["0002", "0003", "0005", "0006", "0007", "0008", "0009", "0010", "0011", "0e12"];

/** The double's answer to a settle of a payment from `from` (it reads nothing else of it). */
async function settleAs(from: string) {
  const res = await fetch(`${FIXTURE}/facilitator/settle`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      paymentPayload: { payload: { authorization: { from, nonce: crypto.randomUUID() } } },
    }),
  });
  return { status: res.status, body: await res.text() };
}

describe("the facilitator double scripts only the payers tests make up", () => {
  it("an x402 tool call from a wallet whose address merely ends in …0002 is paid and answered", async () => {
    expect(ENDS_IN_0002.address).toMatch(/^0x(?!0{32})[0-9a-fA-F]{36}0002$/);
    const unpaid = await mcpCall(app, paidEnv, "sha256", { text: "abc" });
    const required = unpaid.result.structuredContent as unknown as PaymentRequired;
    const pay = await signedPayment(required, ENDS_IN_0002);
    const { result } = await mcpCall(
      app,
      paidEnv,
      "sha256",
      { text: "abc" },
      { "x402/payment": pay.payload },
    );
    expect(result.isError, result.content[0]?.text).toBeFalsy();
    expect(result._meta?.["x402/payment-response"]).toMatchObject({ success: true });
  });

  it.each(SUFFIXES)(
    "a wallet's address ending in …%s is settled; a made-up test payer's is not",
    async (suffix) => {
      const wallet = await settleAs(`0x${"7f".repeat(18)}${suffix}`);
      expect(wallet.status).toBe(200);
      expect(JSON.parse(wallet.body)).toMatchObject({
        success: true,
        transaction: expect.stringMatching(/^0x/),
      });
      const made = await settleAs(`0x${"0".repeat(35)}a${suffix}`);
      expect(made.status === 200 && made.body.includes('"success":true')).toBe(false);
    },
  );
});
