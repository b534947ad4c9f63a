import type { MiddlewareHandler } from "hono";
import { secureHeaders } from "hono/secure-headers";

type SecureHeadersOptions = NonNullable<Parameters<typeof secureHeaders>[0]>;

import { isCorsPath } from "./cors";

/**
 * The one place security headers are set, for every response the Worker makes: pages, JSON, text,
 * the HTML 402 page x402 shows browsers, errors, 404/405. The CSP is the pages' strict policy
 * (same-origin scripts, styles, images and requests; nothing inline or external; never framed), and
 * it is harmless on JSON and text, which execute nothing: one policy, so no response type is missed.
 */
const options: Partial<SecureHeadersOptions> = {
  contentSecurityPolicy: {
    defaultSrc: ["'none'"],
    scriptSrc: ["'self'"],
    styleSrc: ["'self'"],
    imgSrc: ["'self'"],
    connectSrc: ["'self'"],
    formAction: ["'self'"],
    baseUri: ["'none'"],
    frameAncestors: ["'none'"],
  },
  // DENY matches frame-ancestors 'none' for browsers that only read X-Frame-Options.
  xFrameOptions: "DENY",
  referrerPolicy: "no-referrer",
  // No page needs a camera, microphone, location or payment-request API (the wallet is EIP-1193).
  permissionsPolicy: { camera: [], microphone: [], geolocation: [], payment: [] },
};

const sameOrigin = secureHeaders({ ...options, crossOriginResourcePolicy: "same-origin" });
// What other origins may read by CORS must not be refused to their no-cors loads either.
const crossOrigin = secureHeaders({ ...options, crossOriginResourcePolicy: "cross-origin" });

export const securityHeaders: MiddlewareHandler = (c, next) =>
  isCorsPath(c.req.path) ? crossOrigin(c, next) : sameOrigin(c, next);

/**
 * A Response made by fetch() (or rebuilt by a library) can have immutable headers; copy it once so
 * the header middleware never throws on it. Registered inside securityHeaders.
 */
export const mutableHeaders: MiddlewareHandler = async (c, next) => {
  await next();
  try {
    c.res.headers.set("X-Content-Type-Options", "nosniff");
  } catch {
    c.res = new Response(c.res.body, c.res);
  }
};
