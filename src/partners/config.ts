import type { Bindings } from "../env";
import type { Partner } from "./data";

/** The spec's pricing rule: listing price = multiplier × partner price, the multiplier at least 3. */
export const MIN_MULTIPLIER = 3;

/** What partner prices need: the multiplier alone (documents and the x402 gate use only this). */
export interface PricingConfig {
  /** Multiplier in thousandths, so every derived price stays exact integer micro-dollars. */
  multiplierMilli: bigint;
}

/**
 * Partner configuration for the listing and the try proxy: the multiplier and per-partner base
 * URL overrides. A bad base URL disables only these, never the skills or the documents.
 */
export interface PartnerConfig extends PricingConfig {
  baseUrls: Record<string, string>;
  /** Per-partner wallet overrides (PARTNER_WALLETS): where the operating wallet may pay a partner. */
  wallets: Record<string, string>;
}

/**
 * A configuration value that could not be read, or partners turned off on purpose (`off`); the
 * routes that need it answer 503 with `error`.
 */
export type Refused = { error: string; off?: true };

export function parseMultiplier(raw: string | undefined): { milli: bigint } | Refused {
  // An unquoted 3 in [vars] is a number binding, read as its text (`.trim()` on it threw: a 500 on
  // every paid call). A TOML table or array is refused: `[3]` read as "3" and `[]` as unset, a
  // price set by a value /health calls not text.
  if (typeof raw === "object" && raw !== null)
    return { error: "PARTNER_PRICE_MULTIPLIER is not text (quote it)" };
  const text = String(raw ?? "").trim();
  const value = text === "" ? MIN_MULTIPLIER : Number(text);
  if (!Number.isFinite(value)) return { error: `PARTNER_PRICE_MULTIPLIER "${raw}" is not a number` };
  if (value < MIN_MULTIPLIER)
    return { error: `PARTNER_PRICE_MULTIPLIER ${value} is below the minimum of ${MIN_MULTIPLIER}` };
  const milli = Math.round(value * 1000);
  if (Math.abs(milli - value * 1000) > 1e-6)
    return { error: "PARTNER_PRICE_MULTIPLIER has more than 3 decimals" };
  return { milli: BigInt(milli) };
}

export function pricingConfig(env: Bindings): PricingConfig | Refused {
  const m = parseMultiplier(env.PARTNER_PRICE_MULTIPLIER);
  return "error" in m ? { error: m.error } : { multiplierMilli: m.milli };
}

export function partnerConfig(env: Bindings): PartnerConfig | Refused {
  const pricing = pricingConfig(env);
  if ("error" in pricing) return pricing;
  const urls = parseBaseUrls(env.PARTNER_BASE_URLS);
  if ("error" in urls) return urls;
  const wallets = parseWallets(env.PARTNER_WALLETS);
  if ("error" in wallets) return wallets;
  return { ...pricing, baseUrls: urls.values, wallets: wallets.values };
}

const isHttpUrl = (value: unknown) =>
  typeof value === "string" && URL.canParse(value) && /^https?:$/.test(new URL(value).protocol);

/**
 * A per-partner override variable: a JSON object of partner id → value, each value checked; any
 * other shape is refused with its name, not guessed at.
 */
function parseOverrides(
  name: string,
  raw: string | undefined,
  valid: (value: unknown) => boolean,
  what: string,
): { values: Record<string, string> } | Refused {
  // A TOML table or array (not a JSON string) is an object binding, refused: an array's text is
  // its elements' (['{"textkit":"0x…"}'] parsed as the object and paid while /health said unset).
  if (typeof raw === "object" && raw !== null)
    return { error: `${name} is not text (write it as a JSON string)` };
  const text = String(raw ?? "");
  if (!text.trim()) return { values: {} };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { error: `${name} is not valid JSON` };
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return { error: `${name} is not a JSON object` };
  }
  const bad = Object.entries(value).find(([, v]) => !valid(v));
  if (bad) return { error: `${name}["${bad[0]}"] is not ${what}` };
  return { values: value as Record<string, string> };
}

/** PARTNER_BASE_URLS: partner id → base URL (http or https). */
const parseBaseUrls = (raw: string | undefined) =>
  parseOverrides("PARTNER_BASE_URLS", raw, isHttpUrl, "an http(s) URL");

/** An EVM address as wallets are written (any letter case). */
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/**
 * PARTNER_WALLETS: partner id → the wallet its x402 price is paid to. The listing's
 * ownership_wallet is the spec's placeholder; a deployment names each partner's real wallet here,
 * and the operating wallet pays no other (pay-partner.ts).
 */
const parseWallets = (raw: string | undefined) =>
  parseOverrides(
    "PARTNER_WALLETS",
    raw,
    (w) => typeof w === "string" && ADDRESS.test(w),
    "a 0x wallet address",
  );

/** The wallet a partner is paid to: PARTNER_WALLETS, or the listing's own. */
export const walletOf = (partner: Partner, pc: PartnerConfig) =>
  pc.wallets[partner.id] ?? partner.ownership_wallet;

export const baseUrlOf = (partner: Partner, pc: PartnerConfig) =>
  (pc.baseUrls[partner.id] ?? partner.base_url).replace(/\/+$/, "");
