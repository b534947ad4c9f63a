import { INTERFACE_VERSION } from "../config";
import type { Bindings } from "../env";
import { varText, wholeNumber } from "../var-text";

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

const opt = (value: string | undefined, fallback: string) => varText(value).trim() || fallback;

export function netConfig(env: Bindings): NetConfig {
  // Read defensively: a deployment (or the bench config) may lack any of these vars.
  const e = env as unknown as Partial<Record<string, string>>;
  const doh = opt(e.DOH_RESOLVER, "https://cloudflare-dns.com/dns-query");
  // Read as text (var-text.ts): an unquoted number or table in any of these threw, a 500.
  const base = varText(e.BASE_URL).replace(/\/+$/, "");
  const contact = [base ? `+${base}/docs` : "", varText(e.CONTACT_EMAIL)].filter(Boolean).join("; ");
  const ttl = wholeNumber(e.NETWORK_CACHE_TTL_SECONDS, 3600, 0, 7 * 24 * 3600);
  return {
    wikipediaApi: opt(e.WIKIPEDIA_API_BASE, "https://en.wikipedia.org/w/api.php"),
    wikidataApi: opt(e.WIKIDATA_API_BASE, "https://www.wikidata.org/w/api.php"),
    doh: /^(off|none|false|0)$/i.test(doh) ? null : doh,
    allowHosts: new Set(
      varText(e.FETCH_ALLOW_HOSTS)
        .split(",")
        .map((h) => h.trim().toLowerCase())
        .filter(Boolean),
    ),
    timeoutMs: wholeNumber(e.FETCH_TIMEOUT_MS, 8000, 100, 30_000),
    // KV refuses a TTL under 60 s.
    cacheTtlSeconds: ttl === 0 ? 0 : Math.max(60, ttl),
    userAgent: `AgentSkillsMarketplace/${INTERFACE_VERSION}${contact ? ` (${contact})` : ""}`,
    maxBytes: 2 * 1024 * 1024,
    maxRedirects: 5,
  };
}
