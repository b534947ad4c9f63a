import type { Context } from "hono";

/** The 503 of every route that needs the partner configuration and finds it invalid. */
export const partnersMisconfigured = (c: Context, error: string) =>
  detail(c, 503, `Partner listing is misconfigured: ${error}`);

/** FastAPI-style `{"detail": "..."}` error for every non-validation failure. */
export function detail(
  c: Context,
  status: 400 | 401 | 402 | 403 | 404 | 405 | 409 | 413 | 415 | 429 | 500 | 501 | 502 | 503 | 504,
  message: string,
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {},
) {
  return c.json({ detail: message, ...extra }, status, headers);
}
