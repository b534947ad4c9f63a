/**
 * The security headers of every response the Worker makes: pages, JSON, text, the HTML 402 page
 * x402 shows browsers, errors, 404/405, preflights. The CSP is the pages' strict policy
 * (same-origin scripts, styles, images and requests; nothing inline or external; never framed), and
 * it is harmless on JSON and text, which execute nothing: one policy, so no response type is missed.
 * The values are helmet's (hono/secure-headers) defaults with that CSP; they are written out so
 * the per-request work is one list of header sets (a CPU profile showed the middleware chain).
 */
const COMMON: readonly (readonly [string, string])[] = [
  ["Cross-Origin-Opener-Policy", "same-origin"],
  ["Origin-Agent-Cluster", "?1"],
  ["Referrer-Policy", "no-referrer"],
  ["Strict-Transport-Security", "max-age=15552000; includeSubDomains"],
  ["X-Content-Type-Options", "nosniff"],
  ["X-DNS-Prefetch-Control", "off"],
  ["X-Download-Options", "noopen"],
  // DENY matches frame-ancestors 'none' for browsers that only read X-Frame-Options.
  ["X-Frame-Options", "DENY"],
  ["X-Permitted-Cross-Domain-Policies", "none"],
  ["X-XSS-Protection", "0"],
  [
    "Content-Security-Policy",
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  ],
  // No page needs a camera, microphone, location or payment-request API (the wallet is EIP-1193).
  ["Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=()"],
];

export const SAME_ORIGIN_HEADERS = [["Cross-Origin-Resource-Policy", "same-origin"], ...COMMON] as const;
/** What other origins may read by CORS must not be refused to their no-cors loads either. */
export const CROSS_ORIGIN_HEADERS = [["Cross-Origin-Resource-Policy", "cross-origin"], ...COMMON] as const;
