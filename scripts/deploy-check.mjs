#!/usr/bin/env node
// `npm run deploy` runs this first: it refuses to deploy while wrangler.toml or the Worker's secrets
// still miss what a real deployment needs, and lists everything missing at once.
//
// Vars and binding ids are read from wrangler.toml (wrangler's own parser). Secrets are read with
// `wrangler secret list --format json` (needs `wrangler login`); if that fails, the names in
// DEPLOY_CHECK_SECRETS (comma-separated, e.g. set by CI that manages secrets elsewhere) are used,
// and without either the check refuses and says why. DEPLOY_CHECK_SKIP=1 bypasses it (on purpose).
import { execFileSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { isAddress } from "viem";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const ZERO_ID = /^0+(-0+)*$/;

/** Secrets a deployment cannot run safely without; RPC_URL may be a var instead. */
export const REQUIRED_SECRETS = ["ADMIN_TOKEN", "RECEIPT_SIGNING_KEY", "RPC_URL"];

/** The Stripe events the webhook handles (src/payments/stripe-events.ts): subscribe the endpoint to these. */
export const STRIPE_EVENTS = [
  "checkout.session.completed",
  "checkout.session.async_payment_succeeded",
  "checkout.session.async_payment_failed",
  "checkout.session.expired",
  "charge.refunded",
  "charge.refund.updated",
  "charge.dispute.created",
  "charge.dispute.closed",
];

// The app's own reading of a flag (src/config.ts): unset or empty is the default, else on only for 1/true/yes/on.
const on = (v, fallback) =>
  v === undefined || v === "" ? fallback : /^(1|true|yes|on)$/i.test(String(v).trim());

/** Everything missing, in words; empty when the configuration can be deployed. */
export function problems(config, secrets) {
  const out = [];
  const vars = config.vars ?? {};
  if (!vars.PAY_TO) out.push("PAY_TO is empty: set your own wallet address in wrangler.toml [vars]");
  else if (!isAddress(vars.PAY_TO)) out.push(`PAY_TO "${vars.PAY_TO}" is not an EVM address`);
  for (const db of config.d1_databases ?? []) {
    if (!db.database_id || ZERO_ID.test(db.database_id)) {
      out.push(
        `D1 ${db.binding}: database_id is still zero (wrangler d1 create ${db.database_name ?? "marketplace"})`,
      );
    }
  }
  for (const kv of config.kv_namespaces ?? []) {
    if (!kv.id || ZERO_ID.test(kv.id))
      out.push(`KV ${kv.binding}: id is still zero (wrangler kv namespace create ${kv.binding})`);
  }
  const email = vars.CONTACT_EMAIL ?? "";
  if (!/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(email) || /\.example$|@example\./i.test(email)) {
    out.push(`CONTACT_EMAIL "${email}" is a placeholder: set a real support address`);
  }
  // x402.org's facilitator settles testnets only: on Base mainnet every paid route would answer 503.
  let facilitatorHost = "";
  try {
    facilitatorHost = new URL(vars.FACILITATOR_URL ?? "").host;
  } catch {
    out.push(`FACILITATOR_URL "${vars.FACILITATOR_URL ?? ""}" is not a URL`);
  }
  const x402On = on(vars.X402_ENABLED, true);
  if (x402On && vars.X402_NETWORK === "eip155:8453" && /(^|\.)x402\.org$/.test(facilitatorHost)) {
    out.push(
      "FACILITATOR_URL is x402.org's, which serves testnets only: for Base mainnet set https://api.cdp.coinbase.com/platform/v2/x402 and the CDP_API_KEY_ID / CDP_API_KEY_SECRET secrets",
    );
  }
  if (secrets === undefined) {
    out.push(
      "secrets could not be listed (run `npx wrangler login`, or set DEPLOY_CHECK_SECRETS to the names already set)",
    );
  } else {
    for (const name of REQUIRED_SECRETS) {
      if (name === "RPC_URL" && vars.RPC_URL) continue;
      if (!secrets.includes(name)) out.push(`secret ${name} is not set (npx wrangler secret put ${name})`);
    }
    if (x402On && facilitatorHost === "api.cdp.coinbase.com") {
      for (const name of ["CDP_API_KEY_ID", "CDP_API_KEY_SECRET"])
        if (!secrets.includes(name)) out.push(`secret ${name} is not set: CDP's facilitator needs it`);
    }
    // Card credits need both Stripe secrets: without the webhook's, refunds and disputes never take
    // credits back. Off on purpose: CARDPAY_ENABLED = "false".
    if (on(vars.CARDPAY_ENABLED, true)) {
      for (const name of ["STRIPE_SECRET_KEY", "STRIPE_WEBHOOK_SECRET"])
        if (!secrets.includes(name))
          out.push(
            `secret ${name} is not set, and CARDPAY_ENABLED is on: set it (webhook endpoint https://<host>/api/cardpay/webhook, events ${STRIPE_EVENTS.join(", ")}) or set CARDPAY_ENABLED = "false"`,
          );
    }
  }
  return out;
}

export async function readConfig(configPath) {
  const { experimental_readRawConfig } = await import("wrangler");
  return experimental_readRawConfig({ config: configPath }).rawConfig;
}

function listSecrets(configPath) {
  try {
    const out = execFileSync(
      path.join(root, "node_modules", ".bin", "wrangler"),
      ["secret", "list", "--format", "json", "--config", configPath],
      {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "ignore"],
        env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
      },
    );
    return JSON.parse(out).map((s) => s.name);
  } catch {
    const names = process.env.DEPLOY_CHECK_SECRETS;
    return names === undefined
      ? undefined
      : names
          .split(",")
          .map((s) => s.trim())
          .filter(Boolean);
  }
}

async function main() {
  if (process.env.DEPLOY_CHECK_SKIP === "1") {
    console.error("deploy-check: skipped (DEPLOY_CHECK_SKIP=1)");
    return;
  }
  const configPath = path.resolve(process.env.DEPLOY_CHECK_CONFIG ?? path.join(root, "wrangler.toml"));
  const found = problems(await readConfig(configPath), listSecrets(configPath));
  if (found.length === 0) {
    console.log("deploy-check: configuration complete");
    return;
  }
  console.error(`deploy-check: refusing to deploy; missing:\n${found.map((p) => `  - ${p}`).join("\n")}`);
  process.exit(1);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((e) => {
    console.error(`deploy-check failed: ${e.message}`);
    process.exit(1);
  });
}
