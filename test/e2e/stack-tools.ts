import { execFileSync } from "node:child_process";
import http from "node:http";
import path from "node:path";

// The emulator's API key, as scripts/dev-stack.mjs starts it.
const STRIPE_KEY = "sk_test_local_emulator_key_0000000000";

export type Row = Record<string, number | string | null>;

/** Statements against a stack's local D1 (miniflare's state), one result list per statement. */
export function d1(stackDir: string, ...statements: string[]): Row[][] {
  const out = execFileSync(
    "node_modules/.bin/wrangler",
    [
      "d1",
      "execute",
      "DB",
      "--local",
      "--json",
      "--persist-to",
      path.join(stackDir, "state"),
      "--command",
      statements.join(";\n"),
    ],
    { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] },
  );
  return (JSON.parse(out) as { results: Row[] }[]).map((r) => r.results);
}

/**
 * The Stripe emulator's API (a refund, a dispute, a session read), on a connection of its own:
 * a reused keep-alive one the emulator has just closed fails a POST that must not be sent twice.
 * Anything but a 200 rejects.
 */
export const stripeEmulator = (
  apiBase: string,
  method: "GET" | "POST",
  p: string,
  form: Record<string, string> = {},
) =>
  new Promise<Record<string, unknown> & { id: string }>((resolve, reject) => {
    const body = new URLSearchParams(form).toString();
    const req = http.request(
      `${apiBase}${p}`,
      {
        method,
        agent: false,
        headers: {
          authorization: `Bearer ${STRIPE_KEY}`,
          "content-type": "application/x-www-form-urlencoded",
        },
      },
      (res) => {
        let text = "";
        res.on("data", (d) => {
          text += d;
        });
        res.on("end", () =>
          res.statusCode === 200
            ? resolve(JSON.parse(text))
            : reject(new Error(`${p}: ${res.statusCode} ${text}`)),
        );
      },
    );
    req.on("error", reject);
    req.end(method === "POST" ? body : undefined);
  });
