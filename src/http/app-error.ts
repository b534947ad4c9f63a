import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import { redactSecrets } from "../config";
import type { AppEnv } from "../env";

/**
 * The app's answer to an error a handler threw (app.onError), also given by the skill routes' own
 * chain of steps (chain.ts) at the step that threw, as Hono's compose gives it.
 */
export function answerError(err: Error, c: Context<AppEnv>) {
  if (err instanceof HTTPException && err.status < 500) {
    // Middleware such as bearerAuth attaches its own (JSON) response; keep it.
    if (err.res) return err.getResponse();
    return c.json({ detail: err.message || "Bad Request" }, err.status);
  }
  const id = c.get("requestId");
  // The stack goes to the log (Workers observability), never to the client.
  console.error(
    redactSecrets(
      JSON.stringify({
        level: "error",
        request_id: id,
        path: c.req.path,
        error: String(err),
        stack: err.stack,
      }),
      c.env,
    ),
  );
  return c.json({ detail: "Internal Server Error", request_id: id }, 500);
}
