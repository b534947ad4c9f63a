import { execFile } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { mnemonicToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import {
  DEV_ACCOUNTS,
  d1Where,
  didWebOfBase,
  isPlaceholderHost,
  migrationsProblem,
  problems,
  readConfig,
  retiredKeyProblems,
  warnings,
  wranglerReason,
  // @ts-expect-error plain JS script
} from "../../scripts/deploy-check.mjs";
// The module with no imports (quotas.ts pulls in workerd-only ones), as deploy-check itself reads.
import { LIMITS, NETWORK_MULTIPLES } from "../../src/payments/rate-limit-figures";
import { didWebOf } from "../../src/payments/receipt-key";

const root = path.resolve(import.meta.dirname, "../..");
const shipped = path.join(root, "wrangler.toml");
const ALL_SECRETS = [
  "ADMIN_TOKEN",
  "RECEIPT_SIGNING_KEY",
  "RPC_URL",
  "STRIPE_SECRET_KEY",
  "STRIPE_WEBHOOK_SECRET",
  "CDP_API_KEY_ID",
  "CDP_API_KEY_SECRET",
  "PARTNER_PAYER_KEY",
];

/** Circle's USDC on Base mainnet (wrangler.toml's) and on Base Sepolia. */
const MAINNET_USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const SEPOLIA_USDC = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";

/** A wallet of the maintainer's own (no public key behind it), and the partners' real ones. */
const OWN_WALLET = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed";
const PARTNER_IDS = ["pricefeed", "textkit", "refinery", "notifyhook"];
const PARTNER_URLS = Object.fromEntries(PARTNER_IDS.map((id) => [id, `https://api.${id}.dev`]));
const PARTNER_WALLETS = Object.fromEntries(
  PARTNER_IDS.map((id, i) => [id, `0x${(i + 1).toString(16).padStart(2, "0")}${"ab".repeat(19)}`]),
);

/** wrangler.toml as a maintainer fills it in by following the deploy steps. */
function completed() {
  const dir = mkdtempSync(path.join(os.tmpdir(), "deploy-check-"));
  const text = readFileSync(shipped, "utf8")
    .replace('PAY_TO = ""', `PAY_TO = "${OWN_WALLET}"`)
    .replace('PARTNER_BASE_URLS = ""', `PARTNER_BASE_URLS = '${JSON.stringify(PARTNER_URLS)}'`)
    .replace('PARTNER_WALLETS = ""', `PARTNER_WALLETS = '${JSON.stringify(PARTNER_WALLETS)}'`)
    .replace(
      'database_id = "00000000-0000-0000-0000-000000000000"',
      'database_id = "4b1c6e2a-9f0d-4c1e-8a7b-2d3e4f5a6b7c"',
    )
    .replace('id = "00000000000000000000000000000000"', 'id = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"')
    .replace('CONTACT_EMAIL = "support@agent-skills.example"', 'CONTACT_EMAIL = "ops@skills-marketplace.dev"')
    .replace(
      'FACILITATOR_URL = "https://x402.org/facilitator"',
      'FACILITATOR_URL = "https://api.cdp.coinbase.com/platform/v2/x402"',
    );
  const file = path.join(dir, "wrangler.toml");
  // Relative paths in the config (main, assets) resolve from its directory.
  writeFileSync(
    file,
    text
      .replaceAll('"./static"', `"${path.join(root, "static")}"`)
      .replace('main = "src/index.ts"', `main = "${path.join(root, "src/index.ts")}"`),
  );
  return file;
}

/** The script on this Node with `args` and `env` on top of this process's; its exit code and output. */
const script = (args: string[], env: Record<string, string>) =>
  promisify(execFile)(process.execPath, args, { env: { ...process.env, ...env } }).then(
    (r) => ({ code: 0, out: r.stdout + r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout + e.stderr }),
  );

/** The script on this Node; `nodeVersion`: what process.versions.node says before it runs (what it reads to decide). */
const run = (config: string, secrets?: string, nodeVersion?: string) =>
  script([...claimedNode(nodeVersion), path.join(root, "scripts/deploy-check.mjs")], {
    DEPLOY_CHECK_CONFIG: config,
    ...(secrets === undefined ? {} : { DEPLOY_CHECK_SECRETS: secrets }),
  });

const claimedNode = (version?: string) =>
  version === undefined
    ? []
    : [
        "--import",
        `data:text/javascript,${encodeURIComponent(`Object.defineProperty(process.versions, "node", { value: "${version}" })`)}`,
      ];

describe("deploy-check (npm run deploy refuses an incomplete configuration)", () => {
  it("the shipped wrangler.toml lists every missing item", async () => {
    const found: string[] = problems(await readConfig(shipped), []);
    expect(found.join("\n")).toMatch(/PAY_TO is empty/);
    expect(found.join("\n")).toMatch(/D1 DB: database_id is still zero/);
    expect(found.join("\n")).toMatch(/KV KV: id is still zero/);
    expect(found.join("\n")).toMatch(/CONTACT_EMAIL .* placeholder/);
    for (const s of ["ADMIN_TOKEN", "RECEIPT_SIGNING_KEY", "RPC_URL"]) {
      expect(found.join("\n")).toContain(`secret ${s} is not set`);
    }
  }, 60_000);

  it("a filled-in configuration with its secrets passes; without a secret list it refuses", async () => {
    const config = await readConfig(completed());
    expect(problems(config, ALL_SECRETS)).toEqual([]);
    expect(problems(config, undefined)).toEqual([expect.stringMatching(/secrets could not be listed/)]);
    expect(problems({ ...config, vars: { ...config.vars, PAY_TO: "0x123" } }, ALL_SECRETS)).toEqual([
      "PAY_TO is not an EVM address (0x + 3 hex digits; an address is 0x + 40 hex digits)",
    ]);
    // RPC_URL may be a plain var instead of a secret.
    const withVar = { ...config, vars: { ...config.vars, RPC_URL: "https://mainnet.base.org" } };
    const withoutRpc = ALL_SECRETS.filter((s) => s !== "RPC_URL");
    expect(problems(withVar, withoutRpc)).toEqual([]);
    // The pages link support by mailto: only for a plain address; one they would not link is refused.
    for (const bad of ["", "support", "help@skills-marketplace.dev?cc=x@evil.dev"])
      expect(problems({ ...config, vars: { ...config.vars, CONTACT_EMAIL: bad } }, ALL_SECRETS)).toEqual([
        `CONTACT_EMAIL "${bad}" is not a plain address (name@domain.tld, no "?"): set a real support address`,
      ]);
  }, 60_000);

  it("refuses a wallet whose key is public: anvil/hardhat's 20 mnemonic accounts, and placeholders", async () => {
    const derived = Array.from(
      { length: 20 },
      (_, i) =>
        mnemonicToAccount("test test test test test test test test test test test junk", { addressIndex: i })
          .address,
    );
    expect(DEV_ACCOUNTS).toEqual(derived);
    const config = await readConfig(completed());
    const vars = config.vars as Record<string, string>;
    const withVars = (more: Record<string, string>) =>
      problems({ ...config, vars: { ...vars, ...more } }, ALL_SECRETS);
    // .dev.vars.example's and the local stack's pay-to (anvil #2), in any letter case.
    for (const payTo of [DEV_ACCOUNTS[2], DEV_ACCOUNTS[19].toLowerCase()])
      expect(withVars({ PAY_TO: payTo })).toEqual([expect.stringMatching(/^PAY_TO .* public dev account/)]);
    expect(withVars({ PAY_TO: `0x${"1".repeat(40)}` })).toEqual([expect.stringMatching(/placeholder/)]);
    expect(
      withVars({ PARTNER_WALLETS: JSON.stringify({ ...PARTNER_WALLETS, textkit: DEV_ACCOUNTS[0] }) }),
    ).toEqual([expect.stringMatching(/^partner textkit: wallet .* public dev account/)]);
  }, 60_000);

  it("refuses what a default deploy would list of the partners, and partner vars the Worker refuses", async () => {
    const config = await readConfig(completed());
    const vars = config.vars as Record<string, string>;
    const withVars = (more: Record<string, string>) =>
      problems({ ...config, vars: { ...vars, ...more } }, ALL_SECRETS);
    // Unset: every partner at its listing's placeholder URL, and each paid one at its placeholder
    // wallet (notifyhook is external: never paid, so its wallet is not asked for).
    const defaults = withVars({ PARTNER_BASE_URLS: "", PARTNER_WALLETS: "" });
    expect(defaults).toHaveLength(2 * PARTNER_IDS.length - 1);
    expect(defaults).not.toContainEqual(expect.stringMatching(/^partner notifyhook: wallet/));
    expect(defaults).toContainEqual(
      expect.stringMatching(
        /^partner pricefeed: base URL https:\/\/pricefeed\.partners\.example is a placeholder/,
      ),
    );
    expect(defaults).toContainEqual(
      expect.stringMatching(/^partner pricefeed: wallet 0x1{40} is a placeholder/),
    );
    // What the Worker answers 503 for on every partner route.
    expect(withVars({ PARTNER_BASE_URLS: "{not json" })).toEqual([
      expect.stringMatching(/^PARTNER_BASE_URLS is not valid JSON: every partner route would answer 503/),
    ]);
    expect(withVars({ PARTNER_PRICE_MULTIPLIER: "2" })).toEqual([
      expect.stringMatching(/^PARTNER_PRICE_MULTIPLIER 2 is below the minimum of 3/),
    ]);
    expect(withVars({ PARTNER_WALLETS: '{"pricefeed":"0xabc"}' })).toEqual([
      expect.stringMatching(/^PARTNER_WALLETS\["pricefeed"\] is not a 0x wallet address/),
    ]);
  }, 60_000);

  it('PARTNERS_ENABLED = "false": no partner check at all, the rest still checked', async () => {
    const config = await readConfig(completed());
    const vars = config.vars as Record<string, string>;
    expect(vars.PARTNERS_ENABLED).toBe("true");
    const off = { PARTNERS_ENABLED: "false", PARTNER_BASE_URLS: "", PARTNER_WALLETS: "" };
    expect(problems({ ...config, vars: { ...vars, ...off } }, ALL_SECRETS)).toEqual([]);
    expect(
      problems({ ...config, vars: { ...vars, ...off, PARTNER_BASE_URLS: "{not json" } }, ALL_SECRETS),
    ).toEqual([]);
    expect(problems({ ...config, vars: { ...vars, ...off, PAY_TO: "" } }, ALL_SECRETS)).toEqual([
      expect.stringMatching(/^PAY_TO is empty/),
    ]);
  }, 60_000);

  it("refuses partner base URLs no deployed Worker reaches, or reached over plain http", async () => {
    for (const url of [
      "https://api.example.com",
      "https://partner.example.org/v1",
      "https://printer.local",
      "https://localhost:8443",
      "https://api.localhost",
      "https://127.0.0.1",
      "https://10.1.2.3",
      "https://172.16.0.1",
      "https://192.168.1.20",
      "https://100.64.0.1",
      "https://100.127.255.254",
      "https://169.254.169.254",
      "https://0.0.0.0",
      "https://[::1]",
      "https://[fd00::1]",
      "https://[fe80::1]",
      "https://[::ffff:127.0.0.1]",
    ])
      expect(isPlaceholderHost(url), url).toBe(true);
    for (const url of [
      "https://api.pricefeed.dev",
      "https://10.example-partner.dev",
      "https://8.8.8.8",
      "https://172.32.0.1",
      "https://100.63.255.255",
      "https://100.128.0.1",
    ])
      expect(isPlaceholderHost(url), url).toBe(false);
    const config = await readConfig(completed());
    const vars = config.vars as Record<string, string>;
    const urls = { ...PARTNER_URLS, textkit: "http://api.textkit.dev", pricefeed: "https://api.example.net" };
    expect(
      problems({ ...config, vars: { ...vars, PARTNER_BASE_URLS: JSON.stringify(urls) } }, ALL_SECRETS),
    ).toEqual([
      expect.stringMatching(/^partner pricefeed: base URL https:\/\/api\.example\.net is a placeholder/),
      expect.stringMatching(/^partner textkit: base URL http:\/\/api\.textkit\.dev is not https/),
    ]);
  }, 60_000);

  it("STRIPE_MODE: ships live; a value the Worker cannot read is refused, test mode is said", async () => {
    const config = await readConfig(completed());
    const vars = config.vars as Record<string, string>;
    expect(vars.STRIPE_MODE).toBe("live");
    expect(warnings(config).join("\n")).not.toMatch(/STRIPE_MODE is "test"/);
    expect(problems({ ...config, vars: { ...vars, STRIPE_MODE: "production" } }, ALL_SECRETS)).toEqual([
      expect.stringMatching(/STRIPE_MODE "production" is neither/),
    ]);
    // Test mode on a testnet is staging; on Base mainnet with cards on, only when said so.
    const staging = {
      ...config,
      vars: { ...vars, STRIPE_MODE: "test", X402_NETWORK: "eip155:84532", USDC_ADDRESS: SEPOLIA_USDC },
    };
    expect(problems(staging, ALL_SECRETS, {})).toEqual([]);
    const mainnet = { ...config, vars: { ...vars, STRIPE_MODE: "test" } };
    expect(vars.X402_NETWORK).toBe("eip155:8453");
    expect(problems(mainnet, ALL_SECRETS, {})).toEqual([
      expect.stringMatching(/^STRIPE_MODE is "test" on Base mainnet .*DEPLOY_CHECK_ALLOW_TEST_STRIPE=1/),
    ]);
    expect(problems(mainnet, ALL_SECRETS, { DEPLOY_CHECK_ALLOW_TEST_STRIPE: "1" })).toEqual([]);
    const noCards = ALL_SECRETS.filter((s) => !s.startsWith("STRIPE_"));
    expect(
      problems({ ...mainnet, vars: { ...mainnet.vars, CARDPAY_ENABLED: "false" } }, noCards, {}),
    ).toEqual([]);
    expect(warnings(staging).join("\n")).toMatch(
      /STRIPE_MODE is "test": card credits are sold for Stripe's test cards/,
    );
  }, 60_000);

  it("warnings() reads a switch as the Worker does: CARDPAY_ENABLED = {} or [] is off (no card sold), so test mode is not said", () => {
    for (const off of [{}, [], "false"])
      expect(warnings({ vars: { CARDPAY_ENABLED: off, STRIPE_MODE: "test" } }).join("\n")).not.toMatch(
        /STRIPE_MODE is "test"/,
      );
    expect(warnings({ vars: { CARDPAY_ENABLED: "", STRIPE_MODE: "test" } }).join("\n")).toMatch(
      /STRIPE_MODE is "test": card credits are sold/,
    );
  });

  it("refuses what would break a mainnet deployment after it passed: a testnet facilitator, missing CDP or Stripe secrets", async () => {
    const config = await readConfig(completed());
    const vars = config.vars as Record<string, string>;
    const x402org = { ...config, vars: { ...vars, FACILITATOR_URL: "https://x402.org/facilitator" } };
    expect(problems(x402org, ALL_SECRETS)).toEqual([
      expect.stringMatching(/x402.org's, which serves testnets only/),
    ]);
    // A malformed value is named, not quoted: it may still hold a key, and this output is shared.
    const malformed = {
      ...config,
      vars: { ...vars, FACILITATOR_URL: "x402.example/v2/MALFORMEDKEY0123456789" },
    };
    const said = problems(malformed, ALL_SECRETS);
    expect(said).toEqual([expect.stringMatching(/^FACILITATOR_URL is not a URL/)]);
    expect(said.join("\n")).not.toContain("MALFORMEDKEY0123456789");
    // Another scheme parses, and every read of /supported would fail: refused, not quoted either.
    const otherScheme = problems(
      { ...config, vars: { ...vars, FACILITATOR_URL: "wss://x402.example/v2/MALFORMEDKEY0123456789" } },
      ALL_SECRETS,
    );
    expect(otherScheme).toEqual([expect.stringMatching(/^FACILITATOR_URL is not an http\(s\) URL/)]);
    expect(otherScheme.join("\n")).not.toContain("MALFORMEDKEY0123456789");
    // On a testnet x402.org is the right facilitator.
    const sepolia = {
      ...x402org,
      vars: { ...x402org.vars, X402_NETWORK: "eip155:84532", USDC_ADDRESS: SEPOLIA_USDC },
    };
    expect(problems(sepolia, ALL_SECRETS)).toEqual([]);
    const noCdp = ALL_SECRETS.filter((s) => !s.startsWith("CDP_"));
    expect(problems(config, noCdp)).toEqual([
      expect.stringMatching(/CDP_API_KEY_ID is not set/),
      expect.stringMatching(/CDP_API_KEY_SECRET is not set/),
    ]);
    const noWebhook = ALL_SECRETS.filter((s) => s !== "STRIPE_WEBHOOK_SECRET");
    expect(problems(config, noWebhook)).toEqual([
      expect.stringMatching(
        /STRIPE_WEBHOOK_SECRET is not set, and CARDPAY_ENABLED is on.*charge\.dispute\.created/,
      ),
    ]);
    // Card credits off on purpose (a word the app reads as off): no Stripe secret needed.
    const noStripe = ALL_SECRETS.filter((s) => !s.startsWith("STRIPE_"));
    for (const off of ["false", "off", "no", "0"]) {
      expect(problems({ ...config, vars: { ...vars, CARDPAY_ENABLED: off } }, noStripe)).toEqual([]);
    }
    // x402 off: neither the facilitator nor its secrets matter.
    const noX402 = { ...x402org, vars: { ...x402org.vars, X402_ENABLED: "false" } };
    expect(
      problems(
        noX402,
        ALL_SECRETS.filter((s) => !s.startsWith("CDP_")),
      ),
    ).toEqual([]);
  }, 60_000);

  it.each(["20.19.0", "22.17.1", "23.5.0"])(
    "on Node %s (cannot load TypeScript without a flag) it exits 1 saying to run it through npm run",
    async (version) => {
      const res = await run(completed(), ALL_SECRETS.join(","), version);
      expect(res.code).toBe(1);
      expect(res.out).toMatch(
        new RegExp(
          `^deploy-check: Node ${version.replaceAll(".", "\\.")} cannot load the TypeScript .* run it through npm run`,
        ),
      );
    },
    60_000,
  );

  it.each(["22.18.0", "23.6.0", "24.0.0"])(
    "on Node %s (loads TypeScript) it runs the check",
    async (version) => {
      const res = await run(completed(), ALL_SECRETS.join(","), version);
      expect(res.out).toMatch(/configuration complete/);
      expect(res.code).toBe(0);
    },
    60_000,
  );

  it("the script exits 1 with the list, and 0 once everything is there", async () => {
    const refused = await run(shipped, "ADMIN_TOKEN");
    expect(refused.code).toBe(1);
    expect(refused.out).toMatch(/refusing to deploy; missing:\n {2}- PAY_TO is empty/);
    expect(refused.out).toContain("secret RECEIPT_SIGNING_KEY is not set");
    const ok = await run(completed(), ALL_SECRETS.join(","));
    expect(ok.out).toMatch(/configuration complete/);
    expect(ok.code).toBe(0);
  }, 120_000);
});

describe("values the Worker would refuse or misread once deployed (docs/OPERATIONS.md, Misconfiguration)", () => {
  const withVars = async (more: Record<string, string>, secrets = ALL_SECRETS) => {
    const config = await readConfig(completed());
    return problems({ ...config, vars: { ...(config.vars as Record<string, string>), ...more } }, secrets);
  };

  it("refuses a PAY_TO or USDC_ADDRESS the Worker answers 503 for: the USDC contract, another network's USDC, a bad network", async () => {
    expect(await withVars({ PAY_TO: MAINNET_USDC })).toEqual([
      "PAY_TO is the USDC contract's own address: nobody could spend what is paid to it",
    ]);
    expect(await withVars({ USDC_ADDRESS: SEPOLIA_USDC })).toEqual([
      `USDC_ADDRESS ${SEPOLIA_USDC} is not USDC on eip155:8453 (${MAINNET_USDC}): prices are quoted in USDC`,
    ]);
    expect(await withVars({ USDC_ADDRESS: ` ${MAINNET_USDC}` })).toEqual([
      "USDC_ADDRESS is not an EVM address (0x + 40 hex digits, with spaces around it; an address is 0x + 40 hex digits)",
    ]);
    expect(await withVars({ X402_NETWORK: "base" })).toEqual([
      'X402_NETWORK "base" is not an eip155:<chain id> network (Base mainnet: eip155:8453)',
    ]);
    // A chain @x402/evm lists no USDC for (a local chain): USDC_ADDRESS is taken as set.
    expect(await withVars({ X402_NETWORK: "eip155:31337", USDC_ADDRESS: `0x${"5f".repeat(20)}` })).toEqual(
      [],
    );
  }, 60_000);

  it("refuses a wrangler.toml without the DB or KV binding (without either, every call is a 503 and /health is 503)", async () => {
    const config = await readConfig(completed());
    expect(problems({ ...config, d1_databases: [] }, ALL_SECRETS)).toEqual([
      '[[d1_databases]] binding "DB" is missing: copy it from the shipped wrangler.toml',
    ]);
    expect(problems({ ...config, kv_namespaces: undefined }, ALL_SECRETS)).toEqual([
      '[[kv_namespaces]] binding "KV" is missing: copy it from the shipped wrangler.toml',
    ]);
  }, 60_000);

  it("refuses a STRIPE_API_BASE in [vars] the Worker refuses (its own rule, src/config-urls.ts), and the emulator's local origin", async () => {
    expect(await withVars({ STRIPE_API_BASE: "https://stripe-emulator.staging.dev" })).toEqual([
      "STRIPE_API_BASE points the live key at stripe-emulator.staging.dev, not Stripe (leave it unset in production): the Worker would turn card payments off; remove it from [vars]",
    ]);
    expect(await withVars({ STRIPE_API_BASE: "   " })).toEqual([
      expect.stringMatching(/^STRIPE_API_BASE is not an absolute http\(s\) URL: the Worker would/),
    ]);
    // The Worker lets loopback keep the key on a developer's machine; a deployed one reaches nothing there.
    expect(await withVars({ STRIPE_API_BASE: "http://127.0.0.1:12111" })).toEqual([
      expect.stringMatching(/^STRIPE_API_BASE is a local or reserved host/),
    ]);
    // In test mode too (the Worker's rule lets loopback have a test key): no deployed Worker reaches it.
    expect(await withVars({ STRIPE_MODE: "test", STRIPE_API_BASE: "http://localhost:12111" })).toContainEqual(
      expect.stringMatching(/^STRIPE_API_BASE is a local or reserved host/),
    );
    // A URL's scheme is case-insensitive: the script compared "https:" as written.
    expect(await withVars({ STRIPE_API_BASE: "HTTPS://api.stripe.com" })).toEqual([]);
    expect(await withVars({ STRIPE_API_BASE: "https://api.stripe.com" })).toEqual([]);
  }, 60_000);

  it("refuses what the x402 gate answers 503 for, in the gate's words (src/payments/x402-address.ts)", async () => {
    const lower = OWN_WALLET.toLowerCase();
    const typo = `${OWN_WALLET.slice(0, 3)}${OWN_WALLET[3] === "a" ? "A" : "a"}${OWN_WALLET.slice(4)}`;
    expect(await withVars({ PAY_TO: typo })).toEqual([
      expect.stringMatching(/^PAY_TO 0x5AAeb\w+ is not EIP-55 checksummed/),
    ]);
    expect(await withVars({ PAY_TO: lower })).toEqual([]);
    expect(await withVars({ PAY_TO: `0x${"0".repeat(40)}` })).toEqual([
      `PAY_TO 0x${"0".repeat(40)} is a placeholder, not a wallet: nobody could spend what is paid to it`,
    ]);
  }, 60_000);

  it("refuses a BASE_URL without a scheme, an RPC_URL that is no http(s) URL and a facilitator URL that names an operation", async () => {
    expect(await withVars({ BASE_URL: "skills.example.com" })).toEqual([
      expect.stringMatching(/^BASE_URL "skills.example.com" is not an absolute http\(s\) URL/),
    ]);
    expect(await withVars({ BASE_URL: "https://skills.example.com" })).toEqual([]);
    // RPC_URL as a var: what reconciliation refuses to read is refused here, never quoted.
    for (const rpc of [
      "base-mainnet.example/v2/RPCKEY0123456789",
      "wss://base.example/v2/RPCKEY0123456789",
    ]) {
      const said = await withVars({ RPC_URL: rpc });
      expect(said).toEqual([
        expect.stringMatching(
          /^RPC_URL is not an absolute http\(s\) URL \(its value is not shown\): every reconciliation run would fail/,
        ),
      ]);
      expect(said.join("\n")).not.toContain("RPCKEY0123456789");
    }
    expect(await withVars({ RPC_URL: "https://base-mainnet.example/v2/RPCKEY0123456789" })).toEqual([]);
    expect(
      await withVars({ FACILITATOR_URL: "https://api.cdp.coinbase.com/platform/v2/x402/verify" }),
    ).toEqual([expect.stringMatching(/^FACILITATOR_URL ends in \/verify: give the facilitator's base URL/)]);
    expect(await withVars({ FACILITATOR_URL: "https://api.cdp.coinbase.com/platform/v2/x402/" })).toEqual([]);
  }, 60_000);

  it("refuses a switch the Worker would read as off by surprise, and a number with a unit, naming the var", async () => {
    expect(await withVars({ X402_ENABLED: "ture" })).toEqual([
      'X402_ENABLED "ture" is not a switch the Worker reads (true/false, yes/no, on/off, 1/0): it reads it as off',
    ]);
    expect(await withVars({ FREE_BETA: "enabled" })).toEqual([expect.stringMatching(/^FREE_BETA "enabled"/)]);
    for (const word of ["TRUE", "yes", "1", "On"]) expect(await withVars({ X402_ENABLED: word })).toEqual([]);
    expect(await withVars({ FETCH_TIMEOUT_MS: "8s" })).toEqual([
      'FETCH_TIMEOUT_MS "8s" is not a whole number (no unit): the Worker would not read it as meant',
    ]);
    expect(await withVars({ CALL_LOG_FLUSH_MS: "2 s", NETWORK_CACHE_TTL_SECONDS: "1h" })).toEqual([
      expect.stringMatching(/^NETWORK_CACHE_TTL_SECONDS "1h"/),
      expect.stringMatching(/^CALL_LOG_FLUSH_MS "2 s"/),
    ]);
    // A window longer than the request that holds its flush is read as 20000 ms: say so before deploy.
    expect(await withVars({ CALL_LOG_FLUSH_MS: "60000" })).toEqual([
      'CALL_LOG_FLUSH_MS "60000" is past 20000 ms: the request that holds the flush ends 30 s after its answer, so the Worker uses 20000',
    ]);
    expect(await withVars({ CALL_LOG_FLUSH_MS: "20000" })).toEqual([]);
  }, 60_000);

  it("refuses an unquoted number or boolean, a TOML table or array in [vars], naming it, without throwing: the Worker gets a JSON binding, not text", async () => {
    const config = await readConfig(completed());
    const vars = {
      ...(config.vars as Record<string, unknown>),
      FETCH_TIMEOUT_MS: 8000,
      FREE_BETA: false,
      PARTNER_PRICE_MULTIPLIER: 3,
      STRIPE_MODE: 1,
      PARTNER_WALLETS: {},
      RECEIPT_RETIRED_KEYS: [],
      // A switch as an empty array: the Worker reads it as off, as a table.
      X402_ENABLED: [],
    };
    expect(problems({ ...config, vars }, ALL_SECRETS).sort()).toEqual(
      [
        'FREE_BETA is not a string in [vars] (false): quote it ("false")',
        'FETCH_TIMEOUT_MS is not a string in [vars] (8000): quote it ("8000")',
        'PARTNER_PRICE_MULTIPLIER is not a string in [vars] (3): quote it ("3")',
        'STRIPE_MODE is not a string in [vars] (1): quote it ("1")',
        `PARTNER_WALLETS is a TOML table in [vars], not text: write it as a JSON string (e.g. '{"<id>": "…"}')`,
        "RECEIPT_RETIRED_KEYS is a TOML array in [vars], not text: write it as a JSON string (e.g. '[…]')",
        "X402_ENABLED is a TOML array in [vars], not text: write it as a JSON string (e.g. '[…]')",
      ].sort(),
    );
  }, 60_000);

  it("calls an unquoted TOML date a date, not a table", async () => {
    const file = completed();
    writeFileSync(
      file,
      readFileSync(file, "utf8").replace(
        'CONTACT_EMAIL = "ops@skills-marketplace.dev"',
        "CONTACT_EMAIL = 1979-05-27",
      ),
    );
    expect(problems(await readConfig(file), ALL_SECRETS)).toEqual([
      "CONTACT_EMAIL is a TOML date in [vars], not text: quote it",
    ]);
  }, 60_000);

  it("the script says to quote an unquoted STRIPE_MODE = 1 and exits 1, not 'deploy-check failed' (its notes read STRIPE_MODE first)", async () => {
    const config = completed();
    writeFileSync(config, readFileSync(config, "utf8").replace('STRIPE_MODE = "live"', "STRIPE_MODE = 1"));
    const res = await run(config, ALL_SECRETS.join(","));
    expect(res.out).toContain('STRIPE_MODE is not a string in [vars] (1): quote it ("1")');
    expect(res.out).not.toContain("deploy-check failed");
    expect(res.code).toBe(1);
  }, 60_000);

  it("refuses partners and x402 on without PARTNER_PAYER_KEY (every paid partner call would answer 502), not with either off", async () => {
    const noPayer = ALL_SECRETS.filter((s) => s !== "PARTNER_PAYER_KEY");
    expect(await withVars({}, noPayer)).toEqual([
      expect.stringMatching(
        /^secret PARTNER_PAYER_KEY is not set, and PARTNERS_ENABLED and X402_ENABLED are on/,
      ),
    ]);
    expect(await withVars({ PARTNERS_ENABLED: "false" }, noPayer)).toEqual([]);
    // Card-only: paid partners answer 402 "sold by x402 only" (src/payments/partner-calls.ts), so the key is never used.
    expect(await withVars({ X402_ENABLED: "false" }, noPayer)).toEqual([]);
  }, 60_000);
});

describe("RECEIPT_RETIRED_KEYS (receipt key rotation)", () => {
  const keyPair = (kid: string) => ({
    ...(generateKeyPairSync("ed25519").privateKey.export({ format: "jwk" }) as { d: string; x: string }),
    kty: "OKP",
    crv: "Ed25519",
    kid,
  });
  const publicOf = ({ d: _d, ...rest }: ReturnType<typeof keyPair>) => rest;
  const check = (value: unknown) =>
    retiredKeyProblems({ RECEIPT_RETIRED_KEYS: typeof value === "string" ? value : JSON.stringify(value) });

  it("passes public keys as jwks.json lists them (a fragment or the whole kid), and an unset list", () => {
    const a = publicOf(keyPair("receipts-20260101120000"));
    const b = { ...publicOf(keyPair("receipts-20260301120000")), alg: "EdDSA", use: "sig" };
    expect(check([a, { ...b, kid: `did:web:skills.example#${b.kid}` }])).toEqual([]);
    expect(retiredKeyProblems({})).toEqual([]);
    expect(retiredKeyProblems({ RECEIPT_RETIRED_KEYS: " " })).toEqual([]);
  });

  it("refuses a private key, a bad x, a missing or repeated kid, and a list that is not an array, each said", () => {
    const leaked = keyPair("leaked");
    const good = publicOf(keyPair("good"));
    const found: string[] = check([
      good,
      leaked,
      { ...good, kid: "short-x", x: good.x.slice(1) },
      { ...good, kid: "long-x", x: `${good.x}A` },
      { ...good, kid: "bad-char", x: `${good.x.slice(0, 42)}=` },
      { ...good, kid: "other-curve", crv: "P-256" },
      { ...good, kid: undefined },
      { ...publicOf(keyPair("other")), kid: "did:web:skills.example#good" },
      "not a jwk",
    ]);
    expect(found).toEqual([
      expect.stringMatching(/^RECEIPT_RETIRED_KEYS entry 1 holds a private key \(d\).*leaked already/),
      expect.stringMatching(/^RECEIPT_RETIRED_KEYS entry 2: x is not a 32-byte base64url value/),
      expect.stringMatching(/^RECEIPT_RETIRED_KEYS entry 3: x is not a 32-byte base64url value/),
      expect.stringMatching(/^RECEIPT_RETIRED_KEYS entry 4: x is not a 32-byte base64url value/),
      expect.stringMatching(/^RECEIPT_RETIRED_KEYS entry 5 is not an Ed25519 public key/),
      expect.stringMatching(/^RECEIPT_RETIRED_KEYS entry 6: kid must be/),
      expect.stringMatching(/^RECEIPT_RETIRED_KEYS entry 7: kid good is also entry 0's, with another key/),
      expect.stringMatching(/^RECEIPT_RETIRED_KEYS entry 8 is not a JWK object/),
    ]);
    expect(found.join("\n")).not.toContain(leaked.d);
    for (const value of ["not json", JSON.stringify({ keys: [good] })])
      expect(check(value)).toEqual([expect.stringMatching(/^RECEIPT_RETIRED_KEYS is not a JSON array/)]);
  });

  it("passes the list a second rotation leaves (a key listed again under its full kid), and refuses another deployment's kid", () => {
    const first = publicOf(keyPair("receipts-20260101120000"));
    const second = publicOf(keyPair("receipts-20260301120000"));
    // Rotation 1 appended jwks.json's copy of the first key and the second key's fragment; rotation 2
    // appends jwks.json's copy of the second key (its full kid) and the third key.
    const third = publicOf(keyPair("receipts-20260501120000"));
    const did = "did:web:skills.example";
    const list = [
      { ...first, kid: `${did}#${first.kid}` },
      second,
      { ...second, kid: `${did}#${second.kid}` },
      third,
    ];
    expect(
      retiredKeyProblems({ RECEIPT_RETIRED_KEYS: JSON.stringify(list), BASE_URL: "https://skills.example" }),
    ).toEqual([]);
    const staging = { ...third, kid: `did:web:staging.skills.example#${third.kid}` };
    expect(
      retiredKeyProblems({
        RECEIPT_RETIRED_KEYS: JSON.stringify([staging]),
        BASE_URL: "https://skills.example",
      }),
    ).toEqual([
      expect.stringMatching(
        /^RECEIPT_RETIRED_KEYS entry 0: kid did:web:staging\.skills\.example#.* names another deployment/,
      ),
    ]);
    // Left out by the Worker, so it clashes with no key of this deployment under the same fragment.
    const sameFragment = { ...first, kid: third.kid };
    expect(
      retiredKeyProblems({
        RECEIPT_RETIRED_KEYS: JSON.stringify([staging, sameFragment]),
        BASE_URL: "https://skills.example",
      }),
    ).toEqual([expect.stringMatching(/^RECEIPT_RETIRED_KEYS entry 0: .* names another deployment/)]);
    const local = { ...third, kid: `did:web:127.0.0.1%3A8787#${third.kid}` };
    expect(
      retiredKeyProblems({
        RECEIPT_RETIRED_KEYS: JSON.stringify([local]),
        BASE_URL: "http://127.0.0.1:8787/",
      }),
    ).toEqual([]);
  });

  it("derives the did as the Worker does, so a kid it passes is one the Worker publishes", () => {
    for (const base of [
      "https://skills.example",
      "https://Skills.Example:443/",
      "http://127.0.0.1:8787",
      "http://[::1]:8787/",
      "https://skills.example:8443/a/b//",
      "https://bücher.example/shop",
    ])
      expect(didWebOfBase(base)).toBe(didWebOf(base));
  });

  it("the script refuses a wrangler.toml whose [vars] hold a private key, without printing it", async () => {
    const leaked = keyPair("leaked");
    const file = completed();
    const text = readFileSync(file, "utf8");
    writeFileSync(
      file,
      text.replace(
        'X402LIST_TOKENS = ""',
        `X402LIST_TOKENS = ""\nRECEIPT_RETIRED_KEYS = '${JSON.stringify([leaked])}'`,
      ),
    );
    const res = await run(file, ALL_SECRETS.join(","));
    expect(res.code).toBe(1);
    expect(res.out).toMatch(
      /refusing to deploy; missing:\n {2}- RECEIPT_RETIRED_KEYS entry 0 holds a private key/,
    );
    expect(res.out).not.toContain(leaked.d);
  }, 60_000);
});

describe("rate limits", { timeout: 30_000 }, () => {
  it("a wrangler.toml missing a rate-limit binding, or with another figure or a shared namespace, is refused (the terms would promise a limit nobody counts)", async () => {
    const config = (await readConfig(completed())) as {
      vars: Record<string, string>;
      ratelimits: { name: string; namespace_id: string; simple: { limit: number; period: number } }[];
    };
    const refusals = (c: typeof config) =>
      (problems(c, ALL_SECRETS) as string[]).filter((p) => p.startsWith("[[ratelimits]]"));
    expect(refusals(config)).toEqual([]);
    const without = { ...config, ratelimits: config.ratelimits.filter((r) => !r.name.endsWith("_48")) };
    expect(refusals(without)).toEqual(
      ["RL_IP_48", "RL_PAYER_48", "RL_PAYER_HEAVY_48", "RL_FREE_48"].map((n) =>
        expect.stringContaining(`[[ratelimits]] ${n} is missing`),
      ),
    );
    type Binding = (typeof config.ratelimits)[number];
    const [first, second, ...rest] = config.ratelimits as [Binding, Binding, ...Binding[]];
    const changed = {
      ...config,
      ratelimits: [
        { ...first, simple: { ...first.simple, limit: first.simple.limit + 1 } },
        { ...second, namespace_id: first.namespace_id },
        ...rest,
      ],
    };
    expect(refusals(changed)).toEqual([
      expect.stringContaining(`[[ratelimits]] ${first.name} is limit ${first.simple.limit + 1} per 60 s`),
      expect.stringContaining(`namespace_id ${first.namespace_id} is used by more than one binding`),
    ]);
    // Rate limits off on purpose: nothing to bind. Any other word is on, as the Worker reads it.
    expect(refusals({ ...without, ratelimits: [], vars: { ...config.vars, RATE_LIMITS: "off" } })).toEqual(
      [],
    );
    const unbound = { ...without, ratelimits: [], vars: { ...config.vars, RATE_LIMITS: "enabled" } };
    expect(refusals(unbound)).toHaveLength(Object.keys(LIMITS).length);
  });

  it("the limits the terms for agents publish are the ones wrangler.toml gives the bindings", async () => {
    const config = (await readConfig(shipped)) as {
      ratelimits: { name: string; simple: { limit: number; period: number } }[];
    };
    const shippedLimits = Object.fromEntries(config.ratelimits.map((r) => [r.name, r.simple.limit]));
    expect(shippedLimits).toEqual(LIMITS);
    expect(new Set(config.ratelimits.map((r) => r.simple.period))).toEqual(new Set([60]));
  });

  it("every per-IP binding has an IPv6 /56 and /48 binding at the multiples the terms publish", async () => {
    const config = (await readConfig(shipped)) as {
      ratelimits: { name: string; namespace_id: string; simple: { limit: number } }[];
    };
    const limit = (name: string) => config.ratelimits.find((r) => r.name === name)?.simple.limit;
    for (const base of ["RL_IP", "RL_PAYER", "RL_PAYER_HEAVY", "RL_FREE"]) {
      const own = limit(base) as number;
      expect(limit(`${base}_56`), base).toBe(own * NETWORK_MULTIPLES[56]);
      expect(limit(`${base}_48`), base).toBe(own * NETWORK_MULTIPLES[48]);
    }
    expect(NETWORK_MULTIPLES).toEqual({ 56: 4, 48: 16 });
    expect(new Set(config.ratelimits.map((r) => r.namespace_id)).size).toBe(config.ratelimits.length);
  });
});

describe("upgrades", () => {
  it("npm run deploy and npm run upload (a gradual deployment's version) apply pending migrations, and check they are, before the Worker is uploaded", () => {
    const scripts = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")).scripts;
    const steps = (script: string) => script.split("&&").map((s) => s.trim());
    const before = [
      "node scripts/deploy-check.mjs",
      // The same dry-run build, refused if a module it imports was not attached
      // (scripts/bundle-imports-check.mjs, test/scripts/bundle-imports-check.test.ts).
      "npm run build",
      // No terminal on stdin: wrangler applies without its prompt (a declined prompt exits 0, and
      // the Worker would then be uploaded onto a database without its columns).
      "wrangler d1 migrations apply DB --remote < /dev/null",
      // wrangler's apply can also exit 0 with a migration left unapplied (migrationsProblem).
      "node scripts/deploy-check.mjs --migrated",
    ];
    expect(steps(scripts.deploy)).toEqual([...before, "wrangler deploy --minify"]);
    expect(steps(scripts.upload)).toEqual([...before, "wrangler versions upload --minify"]);
  });

  it("--migrated refuses to upload while D1 has not recorded a migration, and passes once it has (wrangler's local D1)", async () => {
    // The shipped wrangler.toml beside two small migrations of its own: each statement wrangler
    // runs locally starts a workerd, so the project's 26 took a minute and a half.
    const dir = mkdtempSync(path.join(os.tmpdir(), "deploy-check-d1-"));
    const config = path.join(dir, "wrangler.toml");
    writeFileSync(config, readFileSync(shipped, "utf8"));
    mkdirSync(path.join(dir, "migrations"));
    const names = ["0001_first.sql", "0002_second.sql"];
    for (const [i, name] of names.entries())
      writeFileSync(path.join(dir, "migrations", name), `CREATE TABLE IF NOT EXISTS t${i} (id INTEGER);`);
    const local = ["--local", "--persist-to", path.join(dir, "state")];
    const wrangler = (...args: string[]) =>
      promisify(execFile)(
        path.join(root, "node_modules/.bin/wrangler"),
        [...args, "--config", config, ...local],
        {
          env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true" },
        },
      );
    const migrated = (env: Record<string, string> = {}) =>
      script([path.join(root, "scripts/deploy-check.mjs"), "--migrated"], {
        DEPLOY_CHECK_CONFIG: config,
        DEPLOY_CHECK_D1_ARGS: local.join(" "),
        DEPLOY_CHECK_D1_NOT_REMOTE: "1",
        ...env,
      });
    await wrangler("d1", "migrations", "apply", "DB");
    expect(await migrated()).toEqual({
      code: 0,
      out: `deploy-check: every migration is applied (wrangler d1 migrations list DB ${local.join(" ")})\n`,
    });
    // The same local D1 without the test-only switch: its "all applied" says nothing of the deployed one.
    const notRemote = await migrated({ DEPLOY_CHECK_D1_NOT_REMOTE: "" });
    expect(notRemote.code).toBe(1);
    expect(notRemote.out).toContain("has no --remote");
    // D1 as an apply that stopped short leaves it: the newest not recorded.
    await wrangler(
      "d1",
      "execute",
      "DB",
      "--command",
      `DELETE FROM d1_migrations WHERE name = '${names[1]}'`,
    );
    const refused = await migrated();
    expect(refused.code).toBe(1);
    expect(refused.out).toContain(`D1 has not applied ${names[1]} (wrangler d1 migrations list DB --local`);
    // DEPLOY_CHECK_SKIP skips the configuration check, not this one.
    expect(await migrated({ DEPLOY_CHECK_SKIP: "1" })).toEqual(refused);
  }, 120_000);

  it("--migrated lists the remote D1 when DEPLOY_CHECK_D1_ARGS is empty, and its refusal carries wrangler's reason", async () => {
    // No credentials (no token, an empty config home), so wrangler refuses before any request.
    const home = mkdtempSync(path.join(os.tmpdir(), "deploy-check-home-"));
    const out = await script([path.join(root, "scripts/deploy-check.mjs"), "--migrated"], {
      DEPLOY_CHECK_CONFIG: shipped,
      DEPLOY_CHECK_D1_ARGS: "",
      CLOUDFLARE_API_TOKEN: "",
      HOME: home,
      XDG_CONFIG_HOME: home,
      CI: "true",
    });
    expect(out.code).toBe(1);
    expect(out.out).toContain("wrangler d1 migrations list DB --remote failed:");
    expect(out.out).toMatch(/\[ERROR\] .*CLOUDFLARE_API_TOKEN/);
  }, 60_000);

  it("--migrated refuses when wrangler's list says nothing it knows, and reads only --remote unless told", () => {
    const command = "wrangler d1 migrations list DB --remote";
    expect(migrationsProblem({ out: "\n✅ No migrations to apply!\n" }, command)).toBeUndefined();
    expect(migrationsProblem({ out: "Migrations to be applied:\n│ 0028_next.sql │\n" }, command)).toMatch(
      /has not applied 0028_next\.sql/,
    );
    expect(migrationsProblem({ out: "some other wrangler's words" }, command)).toMatch(/printed neither/);
    expect(wranglerReason("\x1b[31m✘ [ERROR]\x1b[0m Couldn't find DB\n\n🪵  Logs were written to x\n")).toBe(
      "✘ [ERROR] Couldn't find DB",
    );
    expect(d1Where({})).toEqual({ args: ["--remote"] });
    expect(d1Where({ DEPLOY_CHECK_D1_ARGS: " " }).problem).toMatch(/has no --remote/);
    expect(d1Where({ DEPLOY_CHECK_D1_ARGS: "--local", DEPLOY_CHECK_D1_NOT_REMOTE: "1" })).toEqual({
      args: ["--local"],
    });
  });

  it("every migration only adds, so the running version keeps working until the new one is up", () => {
    const BLANKED = ["UPDATE osint_calls SET seed_entity = '' WHERE seed_entity <> ''"];
    const dir = path.join(root, "migrations");
    const files = readdirSync(dir).filter((f) => f.endsWith(".sql"));
    expect(files.length).toBeGreaterThan(10);
    for (const file of files) {
      const sql = readFileSync(path.join(dir, file), "utf8").replace(/--[^\n]*/g, "");
      for (const statement of sql.split(";").map((s) => s.trim().replace(/\s+/g, " "))) {
        if (!statement) continue;
        // Or, by name, blanks what must no longer be kept (0016: osint_graph's seeds): the schema stays.
        if (BLANKED.includes(statement)) continue;
        expect(statement, file).toMatch(
          /^(CREATE (UNIQUE )?(TABLE|INDEX) (IF NOT EXISTS )?\w+|ALTER TABLE \w+ ADD (COLUMN )?\w+ )/i,
        );
      }
    }
  });
});
