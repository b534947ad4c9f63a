#!/usr/bin/env node
// `npm run demo [slug] [json-body]`: pays for one skill call on the running local stack with
// @x402/fetch and the stack's test buyer key, then prints the result, the receipt and balances.
// `npm run demo -- --mcp [tool] [json-arguments]`: the same over MCP (official client, x402 in _meta).
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { payingFetch, receiptOf } from "./lib/buyer.mjs";
import { usdcBalance } from "./lib/chain.mjs";
import { connectMcp, payToolCall } from "./lib/mcp-buyer.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
let stack;
try {
  stack = JSON.parse(readFileSync(path.resolve(root, process.env.STACK_DIR ?? ".dev", "stack.json"), "utf8"));
} catch {
  console.error("No local stack found: run `npm start` in another terminal first.");
  process.exit(1);
}
const mcp = process.argv.includes("--mcp");
const args = process.argv.slice(2).filter((a) => a !== "--mcp");
const slug = args[0] ?? "slugify";
const body = args[1] ?? JSON.stringify({ text: "Hello from a paying agent!" });
const buyer = stack.buyers[0].address;

if (mcp) {
  const tool = slug.replaceAll("-", "_");
  const before = await usdcBalance(stack.rpc_url, buyer);
  const client = await connectMcp(stack.base_url);
  const { unpaid, result } = await payToolCall(client, stack.buyer_private_key, tool, JSON.parse(body));
  await client.close();
  const after = await usdcBalance(stack.rpc_url, buyer);
  const offer = unpaid.structuredContent?.accepts?.[0];
  if (offer)
    console.log(
      `tools/call ${tool} unpaid -> PaymentRequired: ${offer.amount} atomic USDC on ${offer.network}`,
    );
  console.log(`tools/call ${tool} ${offer ? "paid" : ""} -> ${result.isError ? "error" : "result"}`);
  console.log(JSON.stringify(result.structuredContent ?? result.content, null, 2));
  const receipt = result._meta?.["x402/payment-response"];
  if (receipt) {
    console.log('receipt (_meta["x402/payment-response"]):', JSON.stringify(receipt));
    console.log(
      `buyer ${buyer} paid ${Number(before - after) / 1e6} USDC (test USDC on the local chain ${stack.chain_id})`,
    );
  }
  process.exit(result.isError ? 1 : 0);
}

const before = await usdcBalance(stack.rpc_url, buyer);
const res = await payingFetch(stack.buyer_private_key)(`${stack.base_url}/api/skills/${slug}`, {
  method: "POST",
  headers: { "content-type": "application/json" },
  body,
});
const after = await usdcBalance(stack.rpc_url, buyer);
console.log(`POST /api/skills/${slug} -> ${res.status}`);
console.log(JSON.stringify(await res.json(), null, 2));
const receipt = receiptOf(res);
if (receipt) {
  console.log("receipt (PAYMENT-RESPONSE):", JSON.stringify(receipt));
  console.log(
    `buyer ${buyer} paid ${Number(before - after) / 1e6} USDC (test USDC on the local chain ${stack.chain_id})`,
  );
}
process.exit(res.ok ? 0 : 1);
