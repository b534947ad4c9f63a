import { encodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequired } from "@x402/core/types";
import { describe, expect, it } from "vitest";
import { explain } from "../../src/payments/x402-offer-body";

// An unfunded wallet's payment is refused by the facilitator's simulation of the transfer
// (invalid_exact_evm_transaction_simulation_failed): the 402 said only "send a new payment", and an
// agent resent one from the same empty wallet. The words now name the likely cause and the check.
const offer = (error: string): string =>
  encodePaymentRequiredHeader({
    x402Version: 2,
    error,
    resource: { url: "https://skills.test/api/skills/sha256", description: "", mimeType: "application/json" },
    accepts: [
      {
        scheme: "exact",
        network: "eip155:8453",
        amount: "3000",
        asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
        payTo: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
        maxTimeoutSeconds: 300,
        extra: { name: "USD Coin", version: "2" },
      },
    ],
  } as PaymentRequired);
const errorOf = (reason: string) =>
  (JSON.parse(explain(offer(reason), undefined) ?? "{}") as { error: string }).error;

describe("a refused payment's 402 says what the payer can do", () => {
  it.each([
    [
      "invalid_exact_evm_transaction_simulation_failed",
      /may hold less USDC than that .*check the wallet's USDC balance/,
    ],
    [
      "invalid_exact_evm_insufficient_balance",
      /holds less USDC than that: fund it, then sign a new payment\.$/,
    ],
    ["insufficient_funds", /holds less USDC than that: fund it, then sign a new payment\.$/],
  ])("%s names the wallet's balance", (reason, words) => {
    const error = errorOf(reason);
    expect(error).toMatch(new RegExp(`^Payment rejected: ${reason}\\. This call costs \\$0\\.003 `));
    expect(error).toMatch(words);
  });

  it("another refusal keeps the plain advice", () => {
    expect(errorOf("invalid_exact_evm_signature")).toMatch(/; send a new payment\.$/);
  });
});
