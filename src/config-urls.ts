// What the configuration's URLs may be. Lowest layer, no imports: src/config.ts reads it, and so
// does scripts/deploy-check.mjs in plain Node, so the Worker and the deploy check refuse the same
// origins. (src/partners/config.ts keeps its own isHttpUrl: plain Node loads it too, and a relative
// import would need its .ts extension there.)

/** An absolute http(s) URL. */
export const isHttpUrl = (value: string) => URL.canParse(value) && /^https?:$/.test(new URL(value).protocol);

/**
 * RPC_URL (read as trimmed text; unset is ""): reconciliation reads the chain through viem's http
 * transport, which takes an http(s) URL only. Anything else (no scheme, ws://) failed every Cron run
 * on its first read with viem's "HTTP request failed … Invalid URL", the var named nowhere. Never
 * quoted: a provider's key is in the URL.
 */
export const RPC_URL_NOT_HTTP = "RPC_URL is not an absolute http(s) URL (its value is not shown)";
export const rpcUrlProblem = (rpc: string) => (rpc !== "" && !isHttpUrl(rpc) ? RPC_URL_NOT_HTTP : undefined);

/**
 * STRIPE_API_BASE (the local emulator's origin): one that is no absolute http(s) URL made every
 * checkout and webhook a 500, and in live mode anything but Stripe's own host (or loopback) would
 * be sent the live key. Only the host is quoted.
 */
const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/;

export function stripeApiBaseProblem(raw: unknown, mode: string): string | undefined {
  // Empty is unset; spaces alone are a value that names no origin (stripe.ts's new URL threw: a 500).
  // An unquoted number is read as its text (.trim() on one threw, a 500 on every request). A TOML
  // table or array is refused: stripe.ts reads one as unset (varText) and sends to api.stripe.com,
  // while its text (an array's elements) could pass this check for an emulator's URL.
  if (typeof raw === "object" && raw !== null) return "STRIPE_API_BASE is not text";
  const text = raw === undefined || raw === null ? "" : String(raw);
  if (text === "") return undefined;
  const base = text.trim();
  if (!isHttpUrl(base)) return "STRIPE_API_BASE is not an absolute http(s) URL";
  const { host, hostname, protocol } = new URL(base);
  // Loopback keeps the key on the machine (the emulator; a deployed Worker reaches none).
  const stripes = (protocol === "https:" && /(^|\.)stripe\.com$/.test(hostname)) || LOOPBACK.test(hostname);
  if (mode === "live" && !stripes)
    return `STRIPE_API_BASE points the live key at ${host}, not Stripe (leave it unset in production)`;
  return undefined;
}
