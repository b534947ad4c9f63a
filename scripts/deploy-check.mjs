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
  if (secrets === undefined) {
    out.push(
      "secrets could not be listed (run `npx wrangler login`, or set DEPLOY_CHECK_SECRETS to the names already set)",
    );
  } else {
    for (const name of REQUIRED_SECRETS) {
      if (name === "RPC_URL" && vars.RPC_URL) continue;
      if (!secrets.includes(name)) out.push(`secret ${name} is not set (npx wrangler secret put ${name})`);
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
