import type { MiddlewareHandler } from "hono";

/**
 * Maintainer answers (the /admin pages, the /api/admin API) hold payer addresses, refunds and the
 * payout ledger: every one, refusals included, is kept out of caches and search indexes. Mounted
 * before the body caps, so their 413 and 415 carry it too.
 */
export const privateAnswer: MiddlewareHandler = async (c, next) => {
  await next();
  c.header("Cache-Control", "no-store");
  c.header("X-Robots-Tag", "noindex, nofollow");
};
