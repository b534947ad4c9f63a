import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { cronRun } from "../fixtures/cron";

afterEach(() => vi.restoreAllMocks());

/** The Cron's reconcile summary line, as parsed, from console.warn and the lines cronRun kept. */
async function reconcileLine(bindings: object) {
  const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
  const { lines } = await cronRun(bindings);
  const all = [...lines, ...warn.mock.calls.map((c) => String(c[0]))].map((l) => JSON.parse(l));
  return all.find((l) => l.reconcile);
}

describe("reconciliation without RPC_URL", () => {
  it("is a warn line while x402 payments are sold (they settle, but none is ever reconciled)", async () => {
    const line = await reconcileLine({ ...env, FREE_BETA: "false", X402_ENABLED: "true" });
    expect(line).toMatchObject({ level: "warn", reconcile: { skipped: "RPC_URL is not set" } });
  });

  it("stays info where no x402 payment is taken (free beta, or x402 off)", async () => {
    expect(await reconcileLine({ ...env, FREE_BETA: "true" })).toMatchObject({ level: "info" });
    expect(await reconcileLine({ ...env, FREE_BETA: "false", X402_ENABLED: "false" })).toMatchObject({
      level: "info",
    });
  });
});

describe("POST /api/admin/reconcile with an RPC that fails", () => {
  it("answers 502 saying so (never a bare 500), without the RPC URL, which may carry a key", async () => {
    const token = "reconcile-rpc-down-0123456789";
    // An HTML 500 page, as a provider's gateway answers; the key in its query must stay secret.
    const rpc = `${new URL(env.WIKIPEDIA_API_BASE).origin}/pages/upstream-failure?apikey=SECRETKEY123`;
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const res = await createApp().fetch(
      new Request("https://skills.test/api/admin/reconcile", {
        method: "POST",
        headers: { authorization: `Bearer ${token}` },
      }),
      { ...env, ADMIN_TOKEN: token, RPC_URL: rpc },
    );
    expect(res.status).toBe(502);
    const body = await res.json<{ detail: string }>();
    expect(body.detail).toMatch(/^Reconciliation could not read the chain: the RPC \(RPC_URL\) failed/);
    expect(body.detail).not.toContain("SECRETKEY123");
    const logged = errors.mock.calls.map((c) => String(c[0])).join("\n");
    expect(logged).toContain("admin reconcile failed");
    expect(logged).not.toContain("SECRETKEY123");
  });
});
