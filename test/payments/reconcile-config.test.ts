import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { cronRun } from "../fixtures/cron";

afterEach(() => vi.restoreAllMocks());

/** The Cron's reconcile summary line, as parsed, from console.warn and the lines cronRun kept. */
async function reconcileLine(bindings: object, rpcUrl?: string) {
  return (await cronLines(bindings, rpcUrl)).all.find((l) => l.reconcile);
}

/** The Cron's run: what it threw, and every line it logged (console.warn too), parsed. */
async function cronLines(bindings: object, rpcUrl?: string) {
  const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
  const { thrown, lines } = await cronRun(bindings, rpcUrl);
  const all = [...lines, ...warn.mock.calls.map((c) => String(c[0]))].map((l) => JSON.parse(l));
  return { thrown, all };
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

describe("an RPC_URL that is no http(s) URL", () => {
  const NAMED = "RPC_URL is not an absolute http(s) URL (its value is not shown)";

  it.each(["rpc.example/v2/SECRETKEY123", "ws://127.0.0.1:8545"])(
    "%s: the Cron's run fails naming the var (not viem's HTTP request failed), at warn, without its value",
    async (rpc) => {
      const { thrown, all } = await cronLines({ ...env, FREE_BETA: "true" }, rpc);
      expect(all.find((l) => l.reconcile)).toMatchObject({ level: "warn", reconcile: { skipped: NAMED } });
      expect(thrown).toContain(`reconcile: ${NAMED}`);
      const text = `${thrown}\n${JSON.stringify(all)}`;
      expect(text).not.toContain("HTTP request failed");
      expect(text).not.toContain("SECRETKEY123");
    },
  );

  it("POST /api/admin/reconcile answers 503 saying so; nothing decided", async () => {
    const token = "reconcile-rpc-malformed-0123456789";
    const res = await createApp().fetch(
      new Request("https://skills.test/api/admin/reconcile", {
        method: "POST",
        headers: { authorization: `Bearer ${token}` },
      }),
      { ...env, ADMIN_TOKEN: token, RPC_URL: "rpc.example/v2/SECRETKEY123" },
    );
    expect(res.status).toBe(503);
    const body = await res.json<{ skipped: string; checked: number }>();
    expect(body).toMatchObject({ skipped: NAMED, checked: 0 });
  });
});

describe("the Cron without the DB binding", () => {
  it("does nothing, logs one line naming it, and fails naming it (not a TypeError per part)", async () => {
    const bindings: Record<string, unknown> = { ...env };
    delete bindings.DB;
    const { thrown, all } = await cronLines(bindings);
    expect(all).toEqual([
      {
        cron: "*/5 * * * *",
        level: "error",
        msg: "storage binding missing: the Cron's run did nothing",
        missing: ["DB"],
      },
    ]);
    expect(thrown).toContain('"missing":["DB"]');
    expect(thrown).not.toContain("TypeError");
  });
});

describe("the Cron without the KV binding", () => {
  it("runs reconciliation, the prune and the size check; skips the figures and the checkout sweep, naming KV; fails naming it", async () => {
    const bindings: Record<string, unknown> = { ...env };
    delete bindings.KV;
    const { thrown, all } = await cronLines(bindings);
    // What ran: reconciliation's summary (no RPC here: skipped for that, not for KV), the prune's
    // counts and the database's size.
    expect(all.find((l) => l.reconcile)?.reconcile).toMatchObject({ checked: 0 });
    expect(all.find((l) => l.pruned)).toBeDefined();
    expect(all.find((l) => l.database)).toBeDefined();
    // What did not: the published figures (written to KV) and the sweep (its grant runs a first call).
    const errors = all.filter((l) => l.level === "error").map((l) => l.error);
    expect(errors).toEqual([
      "stats: Error: skipped: the KV binding is missing",
      "checkout_sweep: Error: skipped: the KV binding is missing",
    ]);
    expect(all.find((l) => l.stats || l.checkout_sweep)).toBeUndefined();
    expect(thrown).toContain("stats: Error: skipped: the KV binding is missing");
    expect(thrown).toContain("checkout_sweep: Error: skipped: the KV binding is missing");
    expect(thrown).not.toContain("TypeError");
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
