import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import type { PaymentRequired } from "@x402/core/types";
import {
  extractOffersFromPaymentRequired,
  extractReceiptFromResponse,
  type JWSSignedOffer,
  verifyOfferSignatureJWS,
} from "@x402/extensions/offer-receipt";
import { generatePaymentId } from "@x402/extensions/payment-identifier";
import { createPublicClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { describe, expect, inject, it } from "vitest";
// @ts-expect-error plain JS helpers shared with the scripts
import { usdcBalance } from "../../scripts/lib/chain.mjs";
// @ts-expect-error plain JS helpers shared with the scripts
import { resolveKey, verifyReceipt } from "../../scripts/lib/receipt-verify.mjs";
import { fetchPayingWithId } from "../fixtures/payments";

// Idempotent retries and receipts on the real local stack: anvil, the real USDC contract, the
// x402 facilitator, wrangler dev; the buyer is the unmodified @x402/fetch client.
const stack = inject("stack") as {
  base_url: string;
  rpc_url: string;
  admin_token: string;
  buyers: { address: string; privateKey: `0x${string}` }[];
};
const run = promisify(execFile);
const BUYER = 7;
const PRICE = 3000n; // uuid-mint, atomic USDC

/** @x402/fetch with the payment-identifier extension: every payment it signs carries `paymentId`. */
function payingFetch(paymentId: string) {
  const buyer = stack.buyers[BUYER];
  if (!buyer) throw new Error("no buyer");
  return fetchPayingWithId(privateKeyToAccount(buyer.privateKey), paymentId);
}

const mint = (pay: typeof fetch, signal?: AbortSignal) =>
  pay(`${stack.base_url}/api/skills/uuid-mint`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ count: 4 }),
    signal,
  });
const sha256Hex = async (bytes: Uint8Array) =>
  Buffer.from(await crypto.subtle.digest("SHA-256", bytes)).toString("hex");

/** uuid_mint ledger rows of one payer (other e2e files may have paid from the same account). */
async function ledgerRowsOf(payer: string) {
  const res = await fetch(`${stack.base_url}/api/admin/payments?resource=uuid_mint&limit=1000`, {
    headers: { authorization: `Bearer ${stack.admin_token}` },
  });
  const { payments } = (await res.json()) as { payments: { payer: string; tx_hash: string }[] };
  return payments.filter((p) => p.payer.toLowerCase() === payer.toLowerCase());
}

const verifyCli = (...args: string[]) =>
  run(process.execPath, ["scripts/verify-receipt.mjs", ...args]).then(
    (r) => ({ code: 0, out: JSON.parse(r.stdout) }),
    (e: { code: number; stdout: string }) => ({ code: e.code, out: JSON.parse(e.stdout || "{}") }),
  );

describe("idempotent retries and receipts on the real chain", () => {
  it("a client that aborts after settlement retries: nothing more is paid, it gets the bytes it paid for; the receipt verifies, a tampered body does not", async () => {
    const buyer = stack.buyers[BUYER]?.address as string;
    const before: bigint = await usdcBalance(stack.rpc_url, buyer);
    const paymentId = generatePaymentId();
    const rowsBefore = await ledgerRowsOf(buyer);

    // The 402 carries a signed offer a standard client verifies through the did:web in its kid.
    const unpaid = await fetch(`${stack.base_url}/api/skills/uuid-mint`, { method: "POST", body: "{}" });
    const required: PaymentRequired = decodePaymentRequiredHeader(
      unpaid.headers.get("payment-required") ?? "",
    );
    expect(required.extensions?.["payment-identifier"]).toMatchObject({ info: { required: false } });
    const [offer] = extractOffersFromPaymentRequired(required);
    const offerPayload = await verifyOfferSignatureJWS(offer as JWSSignedOffer);
    expect(offerPayload).toMatchObject({ amount: String(PRICE), payTo: required.accepts[0]?.payTo });

    // First attempt: paid and settled (the headers arrived), then the client aborts before it has
    // read the body: the answer is lost.
    const abort = new AbortController();
    const lost = await mint(payingFetch(paymentId), abort.signal);
    expect(lost.status).toBe(200);
    abort.abort(); // never reads the body
    const lostReceipt = await verifyReceipt(lost.headers.get("x-payment-receipt"), {
      jwk: (await resolveKey(lost.headers.get("x-payment-receipt"), { baseUrl: stack.base_url })).jwk,
    });
    const settlement = decodePaymentResponseHeader(lost.headers.get("payment-response") ?? "");
    expect(settlement.success).toBe(true);
    expect(await usdcBalance(stack.rpc_url, buyer)).toBe(before - PRICE);

    // Retry: a new client, a fresh signature, the same payment id.
    const retry = await mint(payingFetch(paymentId));
    expect(retry.status).toBe(200);
    expect(retry.headers.get("x-idempotent-replay")).toBe("true");
    const lostBytes = new Uint8Array(await retry.arrayBuffer());
    // The very bytes the lost answer's receipt was signed over, with the same settlement and receipt.
    expect(await sha256Hex(lostBytes)).toBe(lostReceipt.bodySha256);
    expect(retry.headers.get("payment-response")).toBe(lost.headers.get("payment-response"));
    expect(retry.headers.get("x-payment-receipt")).toBe(lost.headers.get("x-payment-receipt"));
    expect(await usdcBalance(stack.rpc_url, buyer)).toBe(before - PRICE);
    const rowsAfter = await ledgerRowsOf(buyer);
    expect(rowsAfter.length - rowsBefore.length).toBe(1);
    expect(rowsAfter.filter((p) => p.tx_hash === settlement.transaction)).toHaveLength(1);

    // The receipt names the transaction that is on chain, and the exact bytes delivered.
    const receipt = extractReceiptFromResponse(lost);
    expect(receipt?.signature).toBe(lost.headers.get("x-payment-receipt"));
    const chain = createPublicClient({ transport: http(stack.rpc_url) });
    const tx = await chain.getTransactionReceipt({ hash: settlement.transaction as `0x${string}` });
    expect(tx.status).toBe("success");

    const dir = mkdtempSync(path.join(os.tmpdir(), "receipt-"));
    const receiptFile = path.join(dir, "headers.txt");
    const bodyFile = path.join(dir, "body.json");
    writeFileSync(receiptFile, `x-payment-receipt: ${lost.headers.get("x-payment-receipt")}\n`);
    writeFileSync(bodyFile, lostBytes);
    const ok = await verifyCli(receiptFile, "--body", bodyFile, "--base-url", stack.base_url);
    expect(ok.code).toBe(0);
    expect(ok.out).toMatchObject({
      valid: true,
      body_checked: true,
      receipt: {
        transaction: settlement.transaction,
        payer: buyer,
        paymentMethod: "x402",
        amount: String(PRICE),
      },
    });
    // Without --base-url the key is found through the did:web the receipt names.
    expect((await verifyCli(lost.headers.get("payment-response") ?? "", "--body", bodyFile)).code).toBe(0);

    const tampered = readFileSync(bodyFile);
    tampered[tampered.length - 3] ^= 0x01;
    writeFileSync(bodyFile, tampered);
    const bad = await verifyCli(receiptFile, "--body", bodyFile, "--base-url", stack.base_url);
    expect(bad.code).toBe(1);
    expect(bad.out).toMatchObject({ valid: false, reason: expect.stringMatching(/body does not match/) });
  });
});
