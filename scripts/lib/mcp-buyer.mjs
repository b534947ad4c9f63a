// A paying MCP agent as a newcomer would write one: the official MCP client over Streamable HTTP,
// and @x402/core's client with @x402/evm's exact scheme to sign what an unpaid call asks for
// (x402 MCP transport v2: PaymentRequired in the error result, payment in _meta["x402/payment"]).

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { x402Client } from "@x402/core/client";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { privateKeyToAccount } from "viem/accounts";

/** Connects the official client to `<base>/mcp`; `headers` go on every request (card-credit key). */
export async function connectMcp(baseUrl, headers = {}) {
  const client = new Client({ name: "mcp-buyer", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL("/mcp", baseUrl), {
    requestInit: { headers },
  });
  await client.connect(transport);
  return client;
}

/** The x402 v2 PaymentRequired of an unpaid call's result, or undefined. */
export function paymentRequiredOf(result) {
  const s = result?.structuredContent;
  return result?.isError && s && s.x402Version === 2 && Array.isArray(s.accepts) ? s : undefined;
}

/** Signs the first acceptable offer of a PaymentRequired with the buyer's key. */
export function signPayment(privateKey, paymentRequired) {
  const payer = registerExactEvmScheme(new x402Client(), { signer: privateKeyToAccount(privateKey) });
  return payer.createPaymentPayload(paymentRequired);
}

/** Calls a tool unpaid, signs what it asks for and calls again with the payment. */
export async function payToolCall(client, privateKey, name, args) {
  const unpaid = await client.callTool({ name, arguments: args });
  const required = paymentRequiredOf(unpaid);
  if (!required) return { unpaid, result: unpaid, payment: undefined };
  const payment = await signPayment(privateKey, required);
  const result = await client.callTool({ name, arguments: args, _meta: { "x402/payment": payment } });
  return { unpaid, result, payment };
}
