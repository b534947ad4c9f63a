import type { Context, MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";

/**
 * hono/body-limit with a first check on Content-Length. Hono's reads `request.body` before the
 * header, and in workerd that getter builds the body's stream object on every request: the CPU
 * profile of a 1 KB call showed it as the limit's whole cost. A declared length (without
 * Transfer-Encoding) is what the runtime enforces, so it is compared without touching the body; a
 * chunked body still goes through Hono's counting reader.
 */
export function limitBody(maxSize: number, onError: (c: Context) => Response | Promise<Response>) {
  const counted = bodyLimit({ maxSize, onError });
  const limit: MiddlewareHandler = (c, next) => {
    const headers = c.req.raw.headers;
    const length = headers.get("content-length");
    if (
      length === null ||
      headers.has("transfer-encoding") ||
      c.req.method === "GET" ||
      c.req.method === "HEAD"
    )
      return counted(c, next);
    return Number.parseInt(length, 10) > maxSize ? Promise.resolve(onError(c)) : next();
  };
  return limit;
}
