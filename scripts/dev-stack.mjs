#!/usr/bin/env node
// `npm start`: the whole local stack with embedded defaults. Applies local D1 migrations, starts
// every local service, then the Worker on http://127.0.0.1:$PORT (default 8787), writes
// .dev/stack.json, prints one ready line, and stops everything it started on Ctrl-C.
import { execFileSync } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startChain } from "./lib/chain.mjs";
import { startFacilitator } from "./lib/facilitator.mjs";
import { startPartners } from "./lib/partners.mjs";
import { portIsFree, startProcess, stopProcess, waitFor } from "./lib/proc.mjs";
import { startStripeEmulator } from "./lib/stripe-emulator.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const devDir = path.resolve(root, process.env.STACK_DIR ?? ".dev");
const stateDir = path.join(devDir, "state");
const port = Number(process.env.PORT ?? 8787);
const host = "127.0.0.1";
const baseUrl = `http://${host}:${port}`;
const wrangler = path.join(root, "node_modules", ".bin", "wrangler");
const children = [];
const services = [];
// Local-only admin token; production sets ADMIN_TOKEN as a secret.
// At least 24 characters: the Worker refuses a shorter one (src/config.ts ADMIN_TOKEN_MIN_LENGTH).
const adminToken = process.env.ADMIN_TOKEN ?? "local-admin-token-0123456789";

/**
 * The Ed25519 key that signs offers and receipts (a private JWK), generated once per state
 * directory so receipts of earlier runs keep verifying against /.well-known/did.json.
 */
function receiptSigningKey() {
  const file = path.join(devDir, "receipt-signing-key.json");
  if (!existsSync(file)) {
    const jwk = generateKeyPairSync("ed25519").privateKey.export({ format: "jwk" });
    writeFileSync(file, JSON.stringify({ ...jwk, kid: "local-1" }), { mode: 0o600 });
  }
  return readFileSync(file, "utf8").trim();
}

async function shutdown(code = 0) {
  await Promise.all(children.reverse().map((c) => stopProcess(c)));
  await Promise.all(services.reverse().map((s) => s.stop().catch(() => {})));
  process.exit(code);
}
process.on("SIGINT", () => shutdown(0));
process.on("SIGTERM", () => shutdown(0));

async function main() {
  mkdirSync(stateDir, { recursive: true });
  if (!(await portIsFree(port, host))) {
    throw new Error(`port ${port} is in use; stop what runs there or set PORT=<free port>`);
  }
  // Children find the project's Node 22 first, even when this script is run without npm.
  const quietEnv = {
    ...process.env,
    PATH: `${path.join(root, "node_modules", ".bin")}${path.delimiter}${process.env.PATH}`,
    WRANGLER_SEND_METRICS: "false",
    NO_COLOR: "1",
  };

  execFileSync(wrangler, ["d1", "migrations", "apply", "DB", "--local", "--persist-to", stateDir], {
    cwd: root,
    env: quietEnv,
    stdio: ["ignore", "ignore", "inherit"],
  });

  // The payment stack: a local chain with Circle's USDC at the Base address, and a facilitator.
  const chain = await startChain();
  services.push(chain);
  const facilitator = await startFacilitator({ rpcUrl: chain.rpcUrl, privateKey: chain.facilitatorKey });
  services.push(facilitator);

  // Hosted partners: PriceFeed sells over x402 to its own wallet; the marketplace pays it from an
  // operating wallet (anvil test accounts of their own, not among the buyers).
  const partnerWallet = chain.partner;
  const operatingWallet = chain.operating;
  const partners = await startPartners({ facilitatorUrl: facilitator.url, payTo: partnerWallet.address });
  services.push(partners);

  // Card payments: the Stripe emulator, delivering signed webhooks to the Worker.
  const stripeKey = "sk_test_local_emulator_key_0000000000";
  const webhookSecret = "whsec_local_emulator_secret_000000000";
  const stripe = await startStripeEmulator({
    apiKey: stripeKey,
    webhookSecret,
    webhookUrl: `${baseUrl}/api/cardpay/webhook`,
  });
  services.push(stripe);

  // Values the local Worker needs beyond wrangler.toml; secrets go in a file, not argv.
  const vars = {
    BASE_URL: baseUrl,
    PAY_TO: chain.payTo,
    FACILITATOR_URL: facilitator.url,
    USDC_ADDRESS: chain.usdcAddress,
    ADMIN_TOKEN: adminToken,
    // The emulator's key and events are Stripe test mode (wrangler.toml ships "live").
    STRIPE_MODE: "test",
    STRIPE_SECRET_KEY: stripeKey,
    STRIPE_WEBHOOK_SECRET: webhookSecret,
    STRIPE_API_BASE: stripe.url,
    PARTNER_BASE_URLS: JSON.stringify(partners.urls),
    // The local PriceFeed sells to its own (anvil) wallet: the only wallet the operating wallet pays it.
    PARTNER_WALLETS: JSON.stringify({ pricefeed: partnerWallet.address }),
    PARTNER_PAYER_KEY: operatingWallet.privateKey,
    RECEIPT_SIGNING_KEY: receiptSigningKey(),
    // Reconciliation reads the local chain; fire the cron with GET /__scheduled (--test-scheduled).
    RPC_URL: chain.rpcUrl,
  };
  const envFile = path.join(devDir, "worker.env");
  writeFileSync(
    envFile,
    `${Object.entries(vars)
      .map(([k, v]) => `${k}=${v}`)
      .join("\n")}\n`,
  );

  const worker = startProcess(
    "worker",
    wrangler,
    [
      "dev",
      "--ip",
      host,
      "--port",
      String(port),
      "--persist-to",
      stateDir,
      "--env-file",
      envFile,
      "--log-level",
      "warn",
      "--show-interactive-dev-session=false",
      "--test-scheduled",
    ],
    { cwd: root, env: quietEnv, quiet: !process.env.STACK_VERBOSE },
  );
  children.push(worker);
  await waitFor("the Worker", async () => (await fetch(`${baseUrl}/health`)).ok, {
    child: worker,
    timeoutMs: 90_000,
  });

  const stack = {
    base_url: baseUrl,
    rpc_url: chain.rpcUrl,
    chain_id: chain.chainId,
    network: `eip155:${chain.chainId}`,
    usdc_address: chain.usdcAddress,
    facilitator_url: facilitator.url,
    pay_to: chain.payTo,
    admin_token: adminToken,
    // GET fires the Cron Trigger's scheduled handler (reconciliation) once.
    scheduled_url: `${baseUrl}/__scheduled?cron=${encodeURIComponent("*/5 * * * *")}`,
    stripe_api_base: stripe.url,
    partner_urls: partners.urls,
    partner_wallet: partnerWallet.address,
    operating_wallet: operatingWallet.address,
    test_material_note:
      "buyer keys are anvil's public default test accounts, funded with local test USDC; never use them on a real network",
    buyer_private_key: chain.buyers[0].privateKey,
    buyers: chain.buyers,
    started_at: new Date().toISOString(),
    pid: process.pid,
  };
  writeFileSync(path.join(devDir, "stack.json"), `${JSON.stringify(stack, null, 2)}\n`);
  console.log(
    `ready: ${baseUrl} (catalog ${baseUrl}/api/catalog; stack in ${path.relative(root, devDir)}/stack.json; Ctrl-C stops)`,
  );
}

main().catch(async (e) => {
  console.error(`npm start failed: ${e.message}`);
  await shutdown(1);
});
