#!/usr/bin/env node
// `npm run deploy` runs this first: it refuses to deploy while wrangler.toml or the Worker's secrets
// still miss what a real deployment needs, and lists everything missing at once.
//
// Vars and binding ids are read from wrangler.toml (wrangler's own parser). Secrets are read with
// `wrangler secret list --format json` (needs `wrangler login`); if that fails, the names in
// DEPLOY_CHECK_SECRETS (comma-separated, e.g. set by CI that manages secrets elsewhere) are used,
// and without either the check refuses and says why. DEPLOY_CHECK_SKIP=1 bypasses it (on purpose).
// DEPLOY_CHECK_ALLOW_TEST_STRIPE=1 allows Stripe test mode on Base mainnet (see problems()).
//
// `--migrated` (run by `npm run deploy` and `npm run upload` after `wrangler d1 migrations apply`,
// before the Worker is uploaded) checks only that D1 has recorded every migration in migrations/:
// see migrationsProblem(). DEPLOY_CHECK_SKIP does not skip it; DEPLOY_CHECK_D1_ARGS replaces its
// `--remote` only with DEPLOY_CHECK_D1_NOT_REMOTE=1 (the tests pass `--local --persist-to <dir>`).
//
// Run it through npm (`npm run deploy`): the Node 22 devDependency on
// npm's PATH strips the TypeScript it imports, which Node loads without a flag only from 22.18 on
// 22 and from 23.6 on 23.
import { execFileSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { stripVTControlCharacters } from "node:util";

const [major, minor] = process.versions.node.split(".").map(Number);
if (major < 22 || (major === 22 && minor < 18) || (major === 23 && minor < 6)) {
  console.error(
    `deploy-check: Node ${process.versions.node} cannot load the TypeScript this check reads (22.18 or later on 22, 23.6 or later on 23 can): run it through npm run (npm run deploy), which puts the project's Node 22 first on PATH`,
  );
  process.exit(1);
}
const { partnerConfig } = await import("../src/partners/config.ts");
const { PARTNERS } = await import("../src/partners/data.ts");
const { LIMITS, PERIOD_SECONDS } = await import("../src/payments/rate-limit-figures.ts");
const { mailtoAddress } = await import("../src/contact-email.ts");
// The Worker's own checks, so the two cannot drift: what it would refuse (503) is refused here.
const { isPlaceholderAddress, x402AddressProblems } = await import("../src/payments/x402-address.ts");
const { isHttpUrl, rpcUrlProblem, stripeApiBaseProblem } = await import("../src/config-urls.ts");
const { flag, SWITCH_WORD, SWITCHES, WHOLE_NUMBER, WHOLE_NUMBERS } = await import("../src/var-text.ts");
const { MAX_FLUSH_MS } = await import("../src/stats/flush-window.ts");

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const ZERO_ID = /^0+(-0+)*$/;

/**
 * Accounts 0–19 of the mnemonic anvil and hardhat start with ("test test … junk"): their private
 * keys are public, so whatever is paid to them is anyone's. The local stack and the tests use them;
 * test/scripts/deploy-check.test.ts derives them again from the mnemonic.
 */
export const DEV_ACCOUNTS = [
  "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266",
  "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
  "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
  "0x90F79bf6EB2c4f870365E785982E1f101E93b906",
  "0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65",
  "0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc",
  "0x976EA74026E726554dB657fA54763abd0C3a0aa9",
  "0x14dC79964da2C08b23698B3D3cc7Ca32193d9955",
  "0x23618e81E3f5cdF7f54C3d65f7FBc0aBf5B21E8f",
  "0xa0Ee7A142d267C1f36714E4a8F75612F20a79720",
  "0xBcd4042DE499D14e55001CcbB24a551F3b954096",
  "0x71bE63f3384f5fb98995898A86B02Fb2426c5788",
  "0xFABB0ac9d68B0B445fB7357272Ff202C5651694a",
  "0x1CBd3b2770909D4e10f157cABC84C7264073C9Ec",
  "0xdF3e18d64BC6A983f673Ab319CCaE4f1a57C7097",
  "0xcd3B766CCDd6AE721141F452C550Ca635964ce71",
  "0x2546BcD3c84621e976D8185a91A922aE77ECEc30",
  "0xbDA5747bFD65F08deb54cb465eB87D40e51B197E",
  "0xdD2FD4581271e230360230F9337D5c0430Bf44C0",
  "0x8626f6940E2eb28930eFb4CeF49B2d1F2C9C1199",
];
const isDevAccount = (address) => DEV_ACCOUNTS.some((a) => a.toLowerCase() === String(address).toLowerCase());
const isPlaceholderWallet = (address) => isPlaceholderAddress(String(address));
/**
 * Reserved names (RFC 2606, 6761: example.com/.net/.org and their subdomains, .example, .test,
 * .invalid, localhost), mDNS's .local, and addresses no deployed Worker reaches a partner at
 * (loopback, private, carrier-grade NAT 100.64.0.0/10, link-local, unspecified, IPv4 or IPv6).
 */
export const isPlaceholderHost = (url) => {
  const host = new URL(url).hostname
    .replace(/^\[|\]$/g, "")
    .replace(/\.$/, "")
    .toLowerCase();
  if (/(^|\.)(example|test|invalid|localhost|local)$|(^|\.)example\.(com|net|org)$/.test(host)) return true;
  const ipv4 = /^\d+\.\d+\.\d+\.\d+$/.test(host);
  if (
    ipv4 &&
    /^(127|10|0)\.|^169\.254\.|^192\.168\.|^100\.(6[4-9]|[7-9]\d|1[01]\d|12[0-7])\.|^172\.(1[6-9]|2\d|3[01])\./.test(
      host,
    )
  )
    return true;
  return /^(::1?|::ffff:.*|f[cd][0-9a-f]{2}:.*|fe[89ab][0-9a-f]:.*)$/.test(host);
};

/**
 * The hosted partners as the Worker would list and pay them (src/partners/config.ts reads the same
 * vars): a variable the Worker refuses makes every partner route a 503; a partner left at the
 * listing's placeholder base URL (*.partners.example) or reached over plain http, or a paid
 * partner left at the placeholder wallet (0x1111…) or paid to a dev account, would be listed and
 * tried as it is (an external partner is never paid: its wallet is not needed). None of it while
 * PARTNERS_ENABLED is "false": the Worker then lists no partner.
 */
function partnerProblems(vars) {
  if (!on(vars.PARTNERS_ENABLED, true)) return [];
  const pc = partnerConfig(vars);
  if ("error" in pc) return [`${pc.error}: every partner route would answer 503`];
  const out = [];
  for (const partner of PARTNERS) {
    const base = pc.baseUrls[partner.id] ?? partner.base_url;
    if (isPlaceholderHost(base))
      out.push(
        `partner ${partner.id}: base URL ${base} is a placeholder: set PARTNER_BASE_URLS {"${partner.id}":"https://…"} to its real API (or PARTNERS_ENABLED = "false")`,
      );
    else if (new URL(base).protocol !== "https:")
      out.push(
        `partner ${partner.id}: base URL ${base} is not https: set PARTNER_BASE_URLS to its https URL`,
      );
    const wallet = pc.wallets[partner.id] ?? partner.ownership_wallet;
    if (partner.listing_status === "paid" && (isPlaceholderWallet(wallet) || isDevAccount(wallet)))
      out.push(
        `partner ${partner.id}: wallet ${wallet} is ${isDevAccount(wallet) ? "a public dev account (anvil/hardhat)" : "a placeholder"}: set PARTNER_WALLETS {"${partner.id}":"0x…"} to the partner's own wallet`,
      );
  }
  return out;
}

const KID_FRAGMENT = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * RECEIPT_RETIRED_KEYS (docs/OPERATIONS.md, "Rotating the receipt signing key"): public Ed25519
 * JWKs, each with its own kid. The Worker leaves out what it cannot publish (all of a list it cannot
 * read) and only logs it, so receipts those keys signed stop verifying without a word at deploy
 * time; a private key here is worse: [vars] is in git. Values are never echoed.
 */
export function retiredKeyProblems(vars) {
  const text = String(vars.RECEIPT_RETIRED_KEYS ?? "").trim();
  if (!text) return [];
  const name = "RECEIPT_RETIRED_KEYS";
  let list;
  try {
    list = JSON.parse(text);
  } catch {
    list = undefined;
  }
  if (!Array.isArray(list))
    return [
      `${name} is not a JSON array of public Ed25519 JWKs: the Worker would publish none of them, and every receipt they signed would fail`,
    ];
  const out = [];
  // kid fragment -> [entry index, x]: a key listed again under its full kid is the same key (the
  // Worker skips it; the rotation procedure appends jwks.json's copy of a key added earlier).
  const kids = new Map();
  const did = vars.BASE_URL ? didWebOfBase(String(vars.BASE_URL)) : undefined;
  for (const [i, jwk] of list.entries()) {
    const entry = `${name} entry ${i}`;
    if (typeof jwk !== "object" || jwk === null || Array.isArray(jwk)) {
      out.push(`${entry} is not a JWK object`);
      continue;
    }
    if ("d" in jwk) {
      out.push(
        `${entry} holds a private key (d): list public keys only. wrangler.toml is in git, so that key has leaked already: remove the entry and rotate the key as a leaked one (docs/OPERATIONS.md, "Rotating the receipt signing key")`,
      );
      continue;
    }
    if (jwk.kty !== "OKP" || jwk.crv !== "Ed25519")
      out.push(`${entry} is not an Ed25519 public key (kty "OKP", crv "Ed25519")`);
    const x = typeof jwk.x === "string" ? jwk.x : "";
    if (!/^[A-Za-z0-9_-]{43}$/.test(x) || Buffer.from(x, "base64url").toString("base64url") !== x)
      out.push(`${entry}: x is not a 32-byte base64url value (43 characters)`);
    const prefix = typeof jwk.kid === "string" ? /^did:web:[^#]+#/.exec(jwk.kid)?.[0] : undefined;
    const fragment = typeof jwk.kid === "string" ? jwk.kid.slice(prefix?.length ?? 0) : undefined;
    if (fragment === undefined || !KID_FRAGMENT.test(fragment)) {
      out.push(
        `${entry}: kid must be the key's fragment (1-64 of A-Z a-z 0-9 . _ -) or did:web:<host>#<fragment>, as jwks.json lists it`,
      );
      continue;
    }
    // The Worker publishes only kids of its own did: another host's (staging, workers.dev) is left out.
    if (prefix && did && prefix !== `${did}#`) {
      // Not recorded as a kid: the Worker leaves it out, so it clashes with no other entry.
      out.push(
        `${entry}: kid ${jwk.kid} names another deployment than BASE_URL's ${did}: the Worker would leave it out; use the bare fragment "${fragment}"`,
      );
      continue;
    }
    const seen = kids.get(fragment);
    if (seen && seen[1] !== x)
      out.push(
        `${entry}: kid ${fragment} is also entry ${seen[0]}'s, with another key: each key needs a kid of its own (a verifier picks the key by kid)`,
      );
    else if (!seen) kids.set(fragment, [i, x]);
  }
  return out;
}

/**
 * The did:web of a base URL, as the Worker derives it (src/payments/receipt-key.ts didWebOf; this
 * script runs in plain Node and imports nothing from src: a test holds the two together).
 */
export function didWebOfBase(baseUrl) {
  let url;
  try {
    url = new URL(baseUrl);
  } catch {
    return undefined;
  }
  const path = url.pathname.replace(/\/+$/, "");
  const host = url.port ? `${url.hostname}%3A${url.port}` : url.hostname;
  return `did:web:${host}${path ? path.split("/").join(":") : ""}`;
}

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

// The app's own reading of a switch (src/var-text.ts): unset or empty text is the default, a TOML
// table or array is off, else on only for 1/true/yes/on.
const on = flag;

/**
 * What deploys but may not be meant, in words (printed, not refused): secrets' values cannot be
 * read here, so what depends on them is said once more.
 */
export function warnings(config) {
  const vars = config.vars ?? {};
  // Read as text, as the Worker does: an unquoted STRIPE_MODE = 1 threw here, before problems()
  // could say to quote it.
  const stripeMode = String(vars.STRIPE_MODE ?? "").trim();
  const out = [];
  if (on(vars.CARDPAY_ENABLED, true) && stripeMode === "test")
    out.push(
      'STRIPE_MODE is "test": card credits are sold for Stripe\'s test cards (a staging deployment only); production is "live" with a sk_live_/rk_live_ key',
    );
  out.push(
    `ADMIN_TOKEN's value cannot be read here: the Worker refuses one shorter than 24 characters (admin answers 503); STRIPE_SECRET_KEY must be a ${stripeMode || "live"}-mode key (STRIPE_MODE), or card payments are off`,
  );
  return out;
}

/**
 * Everything missing, in words; empty when the configuration can be deployed. `env` holds the
 * check's own overrides (DEPLOY_CHECK_ALLOW_TEST_STRIPE).
 */
export function problems(config, secrets, env = process.env) {
  const vars = config.vars ?? {};
  // An unquoted number or boolean, a TOML table or array, reaches the Worker as a JSON binding of
  // that type, where every var is read as text: quoted, it is read as written. Said alone: the
  // checks below read each var as text and would say something else (or throw) about it.
  const untyped = Object.entries(vars).filter(([, value]) => typeof value !== "string");
  if (untyped.length)
    return untyped.map(([name, value]) =>
      // An unquoted date (1979-05-27) is parsed as a Date: an object, but no table.
      value instanceof Date
        ? `${name} is a TOML date in [vars], not text: quote it`
        : typeof value === "object" && value !== null
          ? `${name} is a TOML ${Array.isArray(value) ? "array" : "table"} in [vars], not text: write it as a JSON string (e.g. ${Array.isArray(value) ? `'[…]'` : `'{"<id>": "…"}'`})`
          : `${name} is not a string in [vars] (${JSON.stringify(value)}): quote it ("${value}")`,
    );
  const out = [];
  if (!vars.PAY_TO) out.push("PAY_TO is empty: set your own wallet address in wrangler.toml [vars]");
  else if (isDevAccount(vars.PAY_TO))
    out.push(
      `PAY_TO ${vars.PAY_TO} is a public dev account (anvil/hardhat): anyone holds its key; set your own wallet`,
    );
  out.push(...x402VarProblems(vars));
  out.push(...wordProblems(vars));
  out.push(...partnerProblems(vars));
  out.push(...retiredKeyProblems(vars));
  const stripeMode = (vars.STRIPE_MODE ?? "").trim() || "live";
  if (stripeMode !== "live" && stripeMode !== "test")
    out.push(
      `STRIPE_MODE "${vars.STRIPE_MODE}" is neither "live" nor "test" (the Worker turns card payments off)`,
    );
  // The emulator's origin left in [vars]: what the Worker refuses to send the key to (it turns card
  // payments off: src/config.ts stripeApiBaseProblem) is refused here in its words. A secret of
  // that name is not seen here.
  const stripeBase = stripeApiBaseProblem(vars.STRIPE_API_BASE, stripeMode);
  if (stripeBase) out.push(`${stripeBase}: the Worker would turn card payments off; remove it from [vars]`);
  // Beyond the Worker's rule, which lets loopback keep the key on a developer's machine: a deployed
  // Worker reaches no loopback or private host, so every checkout would fail there.
  else if (
    String(vars.STRIPE_API_BASE ?? "").trim() &&
    isPlaceholderHost(String(vars.STRIPE_API_BASE).trim())
  )
    out.push(
      "STRIPE_API_BASE is a local or reserved host (the emulator's): a deployed Worker reaches nothing there; remove it from [vars]",
    );
  // Real USDC beside credits sold for Stripe's test cards: a staging setting left in production.
  if (
    stripeMode === "test" &&
    vars.X402_NETWORK === "eip155:8453" &&
    on(vars.CARDPAY_ENABLED, true) &&
    env.DEPLOY_CHECK_ALLOW_TEST_STRIPE !== "1"
  )
    out.push(
      'STRIPE_MODE is "test" on Base mainnet (X402_NETWORK eip155:8453) with card credits on: credits would be sold for Stripe\'s test cards; set STRIPE_MODE = "live", CARDPAY_ENABLED = "false", or DEPLOY_CHECK_ALLOW_TEST_STRIPE=1 if meant',
    );
  // The Worker needs env.DB and env.KV on every call: without either, every skill and partner call
  // is a 503 (src/http/bindings.ts) and /health is 503. A block removed passed here, as there was no id left to check.
  if (!(config.d1_databases ?? []).some((db) => db.binding === "DB"))
    out.push('[[d1_databases]] binding "DB" is missing: copy it from the shipped wrangler.toml');
  if (!(config.kv_namespaces ?? []).some((kv) => kv.binding === "KV"))
    out.push('[[kv_namespaces]] binding "KV" is missing: copy it from the shipped wrangler.toml');
  for (const db of config.d1_databases ?? []) {
    if (!db.database_id || ZERO_ID.test(db.database_id)) {
      out.push(
        `D1 ${db.binding}: database_id is still zero (wrangler d1 create ${db.database_name ?? "marketplace"})`,
      );
    }
  }
  out.push(...rateLimitProblems(config));
  for (const kv of config.kv_namespaces ?? []) {
    if (!kv.id || ZERO_ID.test(kv.id))
      out.push(`KV ${kv.binding}: id is still zero (wrangler kv namespace create ${kv.binding})`);
  }
  const email = vars.CONTACT_EMAIL ?? "";
  if (/\.example$|@example\./i.test(email)) {
    out.push(`CONTACT_EMAIL "${email}" is a placeholder: set a real support address`);
  } else if (!mailtoAddress(email)) {
    // The pages link support only for an address they can put in a mailto: as it is.
    out.push(
      `CONTACT_EMAIL "${email}" is not a plain address (name@domain.tld, no "?"): set a real support address`,
    );
  }
  // x402.org's facilitator settles testnets only: on Base mainnet every paid route would answer 503.
  let facilitatorHost = "";
  try {
    facilitatorHost = new URL(vars.FACILITATOR_URL ?? "").host;
    // Another scheme parses (the Worker's gate takes it) and then fails every read of /supported.
    if (!isHttpUrl(String(vars.FACILITATOR_URL)))
      out.push(
        "FACILITATOR_URL is not an http(s) URL (its value is not shown: it may hold a key): every paid call would answer 503",
      );
  } catch {
    // Not quoted: a malformed value may still hold a provider's key, and this output is shared.
    out.push("FACILITATOR_URL is not a URL (its value is not shown: it may hold a key)");
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
    // A paid partner is paid per call from the operating wallet: without its key every call of
    // that partner answers 502 (the caller is not charged), and nothing lists it as broken. With
    // x402 off paid partners are not sold at all (402 "sold by x402 only"): the key is never used.
    if (
      on(vars.PARTNERS_ENABLED, true) &&
      x402On &&
      PARTNERS.some((p) => p.listing_status === "paid") &&
      !secrets.includes("PARTNER_PAYER_KEY")
    )
      out.push(
        'secret PARTNER_PAYER_KEY is not set, and PARTNERS_ENABLED and X402_ENABLED are on: every paid partner\'s calls would answer 502; set it (npx wrangler secret put PARTNER_PAYER_KEY) or set PARTNERS_ENABLED = "false"',
      );
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

/**
 * X402_NETWORK, USDC_ADDRESS, PAY_TO beside each other, BASE_URL, RPC_URL and the facilitator's
 * path, as the Worker reads them (src/payments/x402-gate.ts configProblem, src/config.ts,
 * src/config-urls.ts): what it would refuse (503) or, for BASE_URL, ignore.
 */
function x402VarProblems(vars) {
  const out = [];
  out.push(
    ...x402AddressProblems(
      String(vars.X402_NETWORK ?? ""),
      String(vars.USDC_ADDRESS ?? ""),
      String(vars.PAY_TO ?? ""),
    ),
  );
  const base = String(vars.BASE_URL ?? "").trim();
  if (base && !isHttpUrl(base))
    out.push(
      `BASE_URL "${base}" is not an absolute http(s) URL (e.g. https://skills.example.com): the Worker would ignore it`,
    );
  // RPC_URL as a var (as a secret its value is not seen here): what the Worker's reconciliation
  // refuses to read, naming it (src/config-urls.ts).
  const rpc = rpcUrlProblem(String(vars.RPC_URL ?? "").trim());
  if (rpc) out.push(`${rpc}: every reconciliation run would fail; give the provider's https:// endpoint`);
  if (URL.canParse(String(vars.FACILITATOR_URL ?? ""))) {
    // The client appends /supported, /verify and /settle to the base URL itself.
    const { pathname } = new URL(String(vars.FACILITATOR_URL));
    if (/\/(supported|verify|settle)\/?$/.test(pathname))
      out.push(
        `FACILITATOR_URL ends in ${pathname.match(/\/\w+\/?$/)?.[0]}: give the facilitator's base URL, which the Worker adds /supported, /verify and /settle to`,
      );
  }
  return out;
}

/**
 * Switches and numbers as the Worker reads them: a flag it does not know ("ture", "enabled") is
 * read as off, so X402_ENABLED = "ture" stops selling over x402; a number with a unit ("8s") is
 * read as the default. Both refused here, naming the var.
 */
function wordProblems(vars) {
  const out = [];
  for (const name of SWITCHES) {
    const value = vars[name];
    if (value === undefined || value === "" || SWITCH_WORD.test(String(value).trim())) continue;
    out.push(
      `${name} "${value}" is not a switch the Worker reads (true/false, yes/no, on/off, 1/0): it reads it as off`,
    );
  }
  for (const name of WHOLE_NUMBERS) {
    const value = vars[name];
    if (value === undefined || value === "" || WHOLE_NUMBER.test(String(value).trim())) continue;
    out.push(`${name} "${value}" is not a whole number (no unit): the Worker would not read it as meant`);
  }
  const flush = vars.CALL_LOG_FLUSH_MS;
  if (flush !== undefined && WHOLE_NUMBER.test(String(flush).trim()) && Number(flush) > MAX_FLUSH_MS) {
    out.push(
      `CALL_LOG_FLUSH_MS "${flush}" is past ${MAX_FLUSH_MS} ms: the request that holds the flush ends 30 s after its answer, so the Worker uses ${MAX_FLUSH_MS}`,
    );
  }
  return out;
}

/**
 * The Worker counts a budget only on a binding it has (a missing one limits nothing, rather than
 * failing every request), while the terms it publishes to agents state every limit: so each one
 * must be in wrangler.toml, at its figure, with a namespace of its own. RATE_LIMITS = "off" needs none.
 */
function rateLimitProblems(config) {
  // Read as the Worker reads it (src/config.ts rateLimitsOn): anything but an off word is on.
  if (/^(0|false|no|off)$/i.test(String(config.vars?.RATE_LIMITS ?? "").trim())) return [];
  const out = [];
  const given = new Map((config.ratelimits ?? []).map((r) => [r.name, r]));
  for (const [name, limit] of Object.entries(LIMITS)) {
    const r = given.get(name);
    if (!r)
      out.push(
        `[[ratelimits]] ${name} is missing (limit ${limit}, period ${PERIOD_SECONDS}): without it that budget is not counted, while the published terms state it; copy it from the shipped wrangler.toml, or set RATE_LIMITS = "off"`,
      );
    else if (r.simple?.limit !== limit || r.simple?.period !== PERIOD_SECONDS)
      out.push(
        `[[ratelimits]] ${name} is limit ${r.simple?.limit} per ${r.simple?.period} s; the published terms state ${limit} per ${PERIOD_SECONDS} s`,
      );
  }
  const ids = (config.ratelimits ?? []).map((r) => String(r.namespace_id));
  for (const id of new Set(ids.filter((id, i) => ids.indexOf(id) !== i)))
    out.push(`[[ratelimits]] namespace_id ${id} is used by more than one binding: their counts would mix`);
  return out;
}

export async function readConfig(configPath) {
  const { experimental_readRawConfig } = await import("wrangler");
  return experimental_readRawConfig({ config: configPath }).rawConfig;
}

/**
 * `wrangler <args> --config <configPath>`: its stdout, or `error`, why it failed (the error lines
 * of its stderr, else their last lines), so a refusal can tell no token from a wrong database.
 */
function wrangler(args, configPath) {
  try {
    const out = execFileSync(
      path.join(root, "node_modules", ".bin", "wrangler"),
      [...args, "--config", configPath],
      {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
      },
    );
    return { out };
  } catch (e) {
    return { error: wranglerReason(String(e.stderr || e.message)) };
  }
}

export function wranglerReason(stderr) {
  const lines = stripVTControlCharacters(stderr)
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("🪵"));
  const errors = lines.filter((l) => l.includes("[ERROR]"));
  return (errors.length > 0 ? errors : lines.slice(-3)).join(" / ") || "no output";
}

function listSecrets(configPath) {
  try {
    return JSON.parse(wrangler(["secret", "list", "--format", "json"], configPath).out).map((s) => s.name);
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

/**
 * Where `--migrated` lists D1's migrations: `--remote`, what the Worker uses. DEPLOY_CHECK_D1_ARGS
 * replaces it only together with DEPLOY_CHECK_D1_NOT_REMOTE=1 (the tests' `--local --persist-to
 * <dir>`): without `--remote` wrangler reads the local D1, whose "all applied" says nothing of
 * the deployed one. Empty counts as unset.
 */
export function d1Where(env) {
  const args = (env.DEPLOY_CHECK_D1_ARGS || "--remote").split(" ").filter(Boolean);
  if (args.includes("--remote") || env.DEPLOY_CHECK_D1_NOT_REMOTE === "1") return { args };
  return {
    problem: `DEPLOY_CHECK_D1_ARGS="${env.DEPLOY_CHECK_D1_ARGS}" has no --remote: the list would be the local D1's (DEPLOY_CHECK_D1_NOT_REMOTE=1 allows it, for tests)`,
  };
}

/**
 * Why the Worker must not be uploaded yet, from what `command` (wrangler d1 migrations list)
 * printed, `{ out }`, or why it failed, `{ error }`: a migration D1 has not recorded (a new
 * version on a schema without its tables answers every card call and Reveal 503 until it is
 * applied, and writes `final: true` give-back lines for credits it never took), or an answer that
 * says neither. `wrangler d1 migrations apply` can return 0 without applying: a migration whose D1
 * answer reads `success: false` with no error text is marked ❌ and the loop goes on (wrangler
 * 4.156's d1/migrations/apply), and `wrangler versions upload` applies nothing. Undefined: all applied.
 */
export function migrationsProblem(listed, command) {
  if (listed.error !== undefined) return `${command} failed: ${listed.error}`;
  if (/No migrations to apply/.test(listed.out)) return undefined;
  const pending = [...listed.out.matchAll(/(\d{4}_[\w.-]+\.sql)/g)].map((m) => m[1]);
  if (pending.length === 0)
    return `${command} printed neither "No migrations to apply" nor a migration: ${listed.out.trim().slice(-200)}`;
  return `D1 has not applied ${[...new Set(pending)].join(", ")} (${command}): run npx wrangler d1 migrations apply DB --remote, then upload the Worker`;
}

/** `--migrated`; DEPLOY_CHECK_SKIP does not skip it: it guards the upload, not the configuration. */
function checkMigrated(configPath) {
  const where = d1Where(process.env);
  const command = `wrangler d1 migrations list DB ${where.args?.join(" ")}`;
  const problem =
    where.problem ??
    migrationsProblem(wrangler(["d1", "migrations", "list", "DB", ...where.args], configPath), command);
  if (problem === undefined) return console.log(`deploy-check: every migration is applied (${command})`);
  console.error(`deploy-check: refusing to upload the Worker: ${problem}`);
  process.exit(1);
}

async function main() {
  const configPath = path.resolve(process.env.DEPLOY_CHECK_CONFIG ?? path.join(root, "wrangler.toml"));
  if (process.argv.includes("--migrated")) return checkMigrated(configPath);
  if (process.env.DEPLOY_CHECK_SKIP === "1") {
    console.error("deploy-check: skipped (DEPLOY_CHECK_SKIP=1)");
    return;
  }
  const config = await readConfig(configPath);
  for (const w of warnings(config)) console.error(`deploy-check: note: ${w}`);
  const found = problems(config, listSecrets(configPath));
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
