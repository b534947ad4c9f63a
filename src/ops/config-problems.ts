// What /health says about the configuration (routes/health.ts): each mistake by the var's name and
// a fixed phrase, never its value. A value may be a secret, or a private key pasted into PAY_TO.
import {
  adminTokenProblem,
  flag,
  operatingKey,
  type PublicConfig,
  partnersEnabled,
  stripeSetupProblem,
  x402Selling,
} from "../config";
import { isHttpUrl, rpcUrlProblem } from "../config-urls";
import type { Bindings } from "../env";
import { partnerConfig } from "../partners/config";
import { receiptKey } from "../payments/receipt-key";
import { MAX_FLUSH_MS } from "../stats/flush-window";
import { notText, SWITCH_WORD, SWITCHES, varText, WHOLE_NUMBER, WHOLE_NUMBERS } from "../var-text";

export interface ConfigProblem {
  /** The var or secret at fault. */
  var: string;
  /** What is wrong with it and what the Worker does about it, in fixed words. */
  problem: string;
  /** Whether it refuses sales now (paid calls, checkout or partner routes answer 503). */
  blocks: boolean;
}

/** Every var and secret the Worker reads (wrangler.toml's [vars], env.ts's Secrets and OptionalVars). */
export const READ = [
  "BASE_URL",
  "PAY_TO",
  "X402_NETWORK",
  "USDC_ADDRESS",
  "FACILITATOR_URL",
  "X402_ENABLED",
  "CARDPAY_ENABLED",
  "FREE_BETA",
  "STRIPE_MODE",
  "CONTACT_EMAIL",
  "X402_OWNERSHIP_PROOFS",
  "PARTNERS_ENABLED",
  "PARTNER_PRICE_MULTIPLIER",
  "PARTNER_BASE_URLS",
  "PARTNER_WALLETS",
  "X402LIST_TOKENS",
  "CALL_LOG_FLUSH_MS",
  "RATE_LIMITS",
  "RATE_LIMIT_HEAVY",
  "WIKIPEDIA_API_BASE",
  "WIKIDATA_API_BASE",
  "DOH_RESOLVER",
  "FETCH_ALLOW_HOSTS",
  "FETCH_TIMEOUT_MS",
  "NETWORK_CACHE_TTL_SECONDS",
  "RECEIPT_RETIRED_KEYS",
  "STRIPE_SECRET_KEY",
  "STRIPE_WEBHOOK_SECRET",
  "STRIPE_API_BASE",
  "ADMIN_TOKEN",
  "CDP_API_KEY_ID",
  "CDP_API_KEY_SECRET",
  "PARTNER_PAYER_KEY",
  "RECEIPT_SIGNING_KEY",
  "RPC_URL",
] as const;

/**
 * Vars whose table or array is refused rather than read as unset (src/config-urls.ts, src/partners/config.ts):
 * silently dropping one would move where money or a key goes.
 */
const REFUSE_TABLES = [
  "STRIPE_API_BASE",
  "PARTNER_WALLETS",
  "PARTNER_BASE_URLS",
  "PARTNER_PRICE_MULTIPLIER",
] as const;
const X402_VARS = /\b(PAY_TO|X402_NETWORK|USDC_ADDRESS|FACILITATOR_URL)\b/;
const PARTNER_VARS = /\b(PARTNER_PRICE_MULTIPLIER|PARTNER_BASE_URLS|PARTNER_WALLETS)\b/;

/**
 * The configuration's mistakes the Worker can see locally: no facilitator, RPC or Stripe call, so
 * a probe costs nothing. `x402Problem` is the payment gate's own verdict (x402-gate.ts
 * configProblem, which the caller loads only while x402 sells), passed in so this module stays
 * out of the x402 stack's imports.
 */
export function configProblems(
  env: Bindings,
  cfg: PublicConfig,
  x402Problem: string | undefined,
): ConfigProblem[] {
  const vars = env as unknown as Record<string, unknown>;
  const out: ConfigProblem[] = [];
  const add = (name: string, problem: string, blocks = false) => out.push({ var: name, problem, blocks });
  const switches: readonly string[] = SWITCHES;
  const refused: readonly string[] = REFUSE_TABLES;
  const tableRead = (name: string) =>
    switches.includes(name)
      ? "as off"
      : refused.includes(name)
        ? "refused (write it as a JSON string)"
        : "as unset";
  for (const name of READ) {
    if (notText(vars[name]))
      add(
        name,
        `not text: a number or boolean is read as its text, a table or array ${tableRead(name)}; quote it in wrangler.toml`,
      );
  }
  if (x402Problem) {
    const name = X402_VARS.exec(x402Problem)?.[1] ?? "PAY_TO";
    add(name, "refused by the x402 gate: paid calls answer 503 (log: x402 payments misconfigured)", true);
  }
  if (flag(env.CARDPAY_ENABLED, true) && !cfg.cardpayEnabled) {
    const setup = stripeSetupProblem(env);
    const name = !varText(env.STRIPE_SECRET_KEY)
      ? "STRIPE_SECRET_KEY"
      : !varText(env.STRIPE_WEBHOOK_SECRET)
        ? "STRIPE_WEBHOOK_SECRET"
        : setup?.kind === "api base"
          ? "STRIPE_API_BASE"
          : setup?.error.startsWith("STRIPE_MODE")
            ? "STRIPE_MODE"
            : "STRIPE_SECRET_KEY";
    add(name, "card payments are switched on but cannot run: checkout and webhook answer 503", true);
  }
  if (partnersEnabled(env)) {
    const partners = partnerConfig(env);
    if ("error" in partners)
      add(
        PARTNER_VARS.exec(partners.error)?.[1] ?? "PARTNER_PRICE_MULTIPLIER",
        "unreadable: partner routes answer 503",
        true,
      );
  }
  const base = varText(env.BASE_URL).trim();
  if (base && !isHttpUrl(base)) add("BASE_URL", "not an absolute http(s) URL: the request's origin is used");
  for (const name of SWITCHES) {
    const text = varText(vars[name]);
    if (text !== "" && !SWITCH_WORD.test(text.trim()))
      add(name, "not a switch word (true/false, yes/no, on/off, 1/0): read as off");
  }
  for (const name of WHOLE_NUMBERS) {
    const text = varText(vars[name]).trim();
    if (text !== "" && !WHOLE_NUMBER.test(text))
      add(name, "not a whole number (no unit): the default is used");
  }
  const flush = varText(env.CALL_LOG_FLUSH_MS).trim();
  if (WHOLE_NUMBER.test(flush) && Number(flush) > MAX_FLUSH_MS)
    add(
      "CALL_LOG_FLUSH_MS",
      `past ${MAX_FLUSH_MS} ms (a request's waitUntil, which holds the flush, ends 30 s after its answer): ${MAX_FLUSH_MS} is used`,
    );
  const selling = x402Selling(env);
  // A URL of another scheme passes the gate's own check (it parses) and then fails every read of
  // /supported: paid calls 503 and /health 503 on the facilitator check, the var named nowhere.
  const facilitator = varText(env.FACILITATOR_URL).trim();
  if (selling && !x402Problem && URL.canParse(facilitator) && !isHttpUrl(facilitator))
    add("FACILITATOR_URL", "not an http(s) URL: the facilitator cannot be read, paid calls answer 503", true);
  const rpc = varText(env.RPC_URL).trim();
  if (selling && !rpc) add("RPC_URL", "unset while x402 sells: reconciliation does nothing");
  if (rpcUrlProblem(rpc))
    add(
      "RPC_URL",
      "not an absolute http(s) URL: reconciliation does not run (the Cron's run fails naming it)",
    );
  if (selling && partnersEnabled(env) && !operatingKey(env))
    add("PARTNER_PAYER_KEY", "unset or not a private key: x402-priced partners answer 502, refunds wait");
  if (adminTokenProblem(env))
    add("ADMIN_TOKEN", "unset, shorter than 24 characters or not text: admin answers 503");
  if ("error" in receiptKey(env.RECEIPT_SIGNING_KEY, cfg.baseUrl))
    add("RECEIPT_SIGNING_KEY", "unset or unusable: answers carry no signed receipt");
  return out;
}
