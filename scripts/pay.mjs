#!/usr/bin/env node
// `npm run demo [slug] [json-body]`: pays for one skill call on the running local stack with
// @x402/fetch and the stack's test buyer key, then prints the result, the receipt and balances.
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { payingFetch, receiptOf } from "./lib/buyer.mjs";
import { usdcBalance } from "./lib/chain.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
let stack;
try {
  stack = JSON.parse(readFileSync(path.join(root, process.env.STACK_DIR ?? ".dev", "stack.json"), "utf8"));
} catch {
  console.error("No local stack found: run `npm start` in another terminal first.");
  process.exit(1);
}
const slug = process.argv[2] ?? "slugify";
const body = process.argv[3] ?? JSON.stringify({ text: "Hello from a paying agent!" });
const buyer = stack.buyers[0].address;

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
