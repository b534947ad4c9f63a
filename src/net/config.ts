import { INTERFACE_VERSION } from "../config";
import type { Bindings } from "../env";

/** Outbound network configuration of the analytic skills, read from vars with safe defaults. */
export interface NetConfig {
  wikipediaApi: string;
  wikidataApi: string;
  /** DNS-over-HTTPS JSON endpoint; null skips the DNS check (literal checks still apply). */
  doh: string | null;
  /** `host:port` (or `host` for default ports) exempt from the guard: tests and local development only. */
  allowHosts: ReadonlySet<string>;
  timeoutMs: number;
  /** KV cache lifetime; 0 disables the cache. */
  cacheTtlSeconds: number;
  userAgent: string;
  maxBytes: number;
  maxRedirects: number;
}

/**
 * A whole number as written, else the default: parseInt read "8s" (a unit) as 8, and
 * FETCH_TIMEOUT_MS "8s" became the 100 ms floor, failing every network skill's upstream fetch.
 */
const int = (value: string | undefined, fallback: number, min: number, max: number) => {
  // String(): an unquoted 8000 in [vars] arrives as a number (a JSON binding), not a string.
  const text = String(value ?? "").trim();
  return /^\d+$/.test(text) ? Math.min(max, Math.max(min, Number(text))) : fallback;
};

const opt = (value: string | undefined, fallback: string) =>
  value === undefined || value.trim() === "" ? fallback : value.trim();

export function netConfig(env: Bindings): NetConfig {
  // Read defensively: a deployment (or the bench config) may lack any of these vars.
  const e = env as unknown as Partial<Record<string, string>>;
  const doh = opt(e.DOH_RESOLVER, "https://cloudflare-dns.com/dns-query");
  const base = (e.BASE_URL ?? "").replace(/\/+$/, "");
  const contact = [base ? `+${base}/docs` : "", e.CONTACT_EMAIL ?? ""].filter(Boolean).join("; ");
  const ttl = int(e.NETWORK_CACHE_TTL_SECONDS, 3600, 0, 7 * 24 * 3600);
  return {
    wikipediaApi: opt(e.WIKIPEDIA_API_BASE, "https://en.wikipedia.org/w/api.php"),
    wikidataApi: opt(e.WIKIDATA_API_BASE, "https://www.wikidata.org/w/api.php"),
    doh: /^(off|none|false|0)$/i.test(doh) ? null : doh,
    allowHosts: new Set(
      (e.FETCH_ALLOW_HOSTS ?? "")
        .split(",")
        .map((h) => h.trim().toLowerCase())
        .filter(Boolean),
    ),
    timeoutMs: int(e.FETCH_TIMEOUT_MS, 8000, 100, 30_000),
    // KV refuses a TTL under 60 s.
    cacheTtlSeconds: ttl === 0 ? 0 : Math.max(60, ttl),
    userAgent: `AgentSkillsMarketplace/${INTERFACE_VERSION}${contact ? ` (${contact})` : ""}`,
    maxBytes: 2 * 1024 * 1024,
    maxRedirects: 5,
  };
}
