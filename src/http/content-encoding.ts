import type { MiddlewareHandler } from "hono";
import { detail } from "./errors";

/**
 * A request body in a content coding (gzip, br, …) is refused with 415 and `Accept-Encoding:
 * identity` (RFC 9110 §15.5.16), before anything reads it: read as it is, its compressed bytes
 * were a 422 about invalid UTF-8, which sent the client looking for a fault in its JSON.
 * Decoding it instead would let 5 MiB on the wire grow without bound past the body cap.
 *
 * Not async: on every /api/* request it is one header read and the next step, no extra promise.
 */
export const identityBodyOnly: MiddlewareHandler = (c, next) => {
  const method = c.req.method;
  if (method === "GET" || method === "HEAD" || method === "OPTIONS") return next();
  const coding = c.req.raw.headers.get("content-encoding");
  // A comma-separated list of codings, applied in order: only "identity" (or nothing) leaves the
  // body as sent.
  if (coding === null || coding.split(",").every((t) => /^\s*(identity)?\s*$/i.test(t))) return next();
  return Promise.resolve(
    detail(
      c,
      415,
      `Unsupported Content-Encoding "${coding.slice(0, 64)}": send the request body uncompressed.`,
      {},
      { "Accept-Encoding": "identity" },
    ),
  );
};
