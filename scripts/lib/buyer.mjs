// A paying agent as a newcomer would write one: @x402/fetch around fetch, with a viem account.

import { x402Client } from "@x402/core/client";
import { decodePaymentResponseHeader } from "@x402/core/http";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { wrapFetchWithPayment } from "@x402/fetch";
import { privateKeyToAccount } from "viem/accounts";

export function payingFetch(privateKey) {
  const client = registerExactEvmScheme(new x402Client(), { signer: privateKeyToAccount(privateKey) });
  return wrapFetchWithPayment(fetch, client);
}

export function receiptOf(response) {
  const header = response.headers.get("payment-response");
  return header ? decodePaymentResponseHeader(header) : undefined;
}
