import { env } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { partnerConfig } from "../../src/partners/config";
import { FAILED_READ_BACKOFF_MS } from "../../src/payments/x402-gate";
import { paidEnv } from "../helpers";

interface Health {
  status: string;
  checks: {
    d1: { ok: boolean; error?: string };
    kv: { ok: boolean };
    facilitator?: { ok: boolean; error?: string };
    config: { ok: boolean; problems: { var: string; problem: string; blocks: boolean }[] };
  };
}

async function health(bindings: Record<string, unknown>) {
  const res = await createApp().fetch(new Request("https://skills.test/health"), bindings);
  const text = await res.text();
  return { status: res.status, text, body: JSON.parse(text) as Health };
}
const vars = (h: { body: Health }) => h.body.checks.config.problems.map((p) => p.var);

describe("/health tells a monitor about the configuration", () => {
  it("a deployment that sells with nothing wrong in what it checks is 200 ok", async () => {
    const h = await health({
      ...paidEnv(),
      RPC_URL: "http://127.0.0.1:8545",
      ADMIN_TOKEN: "a".repeat(32),
      PARTNER_PAYER_KEY: `0x${"11".repeat(32)}`,
    });
    expect(h.status).toBe(200);
    expect(h.body.status).toBe("ok");
    expect(h.body.checks.config).toEqual({ ok: true, problems: [] });
  });

  it("a PAY_TO that is no address while x402 sells is 503 degraded, naming PAY_TO, never its value", async () => {
    const key = `0x${"ab12".repeat(16)}`;
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const h = await health({ ...paidEnv(), PAY_TO: key });
    errors.mockRestore();
    expect(h.status).toBe(503);
    expect(h.body.status).toBe("degraded");
    expect(h.body.checks.config.problems).toContainEqual({
      var: "PAY_TO",
      problem: "refused by the x402 gate: paid calls answer 503 (log: x402 payments misconfigured)",
      blocks: true,
    });
    expect(h.text).not.toContain(key.slice(2));
  });

  it("PAY_TO empty on free beta sells nothing over x402: no problem, 200", async () => {
    const h = await health({ ...env, FREE_BETA: "true", PAY_TO: "" });
    expect(h.status).toBe(200);
    expect(vars(h)).not.toContain("PAY_TO");
  });

  it.each([
    ...[5, true, [], { a: 1 }].map(
      (value) =>
        [
          { BASE_URL: value },
          "BASE_URL",
          "not text: a number or boolean is read as its text, a table or array as unset; quote it in wrangler.toml",
        ] as [Record<string, unknown>, string, string],
    ),
    [
      { BASE_URL: "skills.example.com" },
      "BASE_URL",
      "not an absolute http(s) URL: the request's origin is used",
    ],
    [{ CALL_LOG_FLUSH_MS: "2s" }, "CALL_LOG_FLUSH_MS", "not a whole number (no unit): the default is used"],
    [
      { CALL_LOG_FLUSH_MS: "60000" },
      "CALL_LOG_FLUSH_MS",
      "past 20000 ms (a request's waitUntil, which holds the flush, ends 30 s after its answer): 20000 is used",
    ],
    ...["base.example/v2/KEY", "ws://127.0.0.1:8545"].map(
      (value) =>
        [
          { RPC_URL: value },
          "RPC_URL",
          "not an absolute http(s) URL: reconciliation does not run (the Cron's run fails naming it)",
        ] as [Record<string, unknown>, string, string],
    ),
    ...[{}, []].map(
      (value) =>
        [
          { PARTNERS_ENABLED: value },
          "PARTNERS_ENABLED",
          "not text: a number or boolean is read as its text, a table or array as off; quote it in wrangler.toml",
        ] as [Record<string, unknown>, string, string],
    ),
    [
      { X402_ENABLED: "ture" },
      "X402_ENABLED",
      "not a switch word (true/false, yes/no, on/off, 1/0): read as off",
    ],
  ])("%j is listed by name and stays 200: no sale is refused", async (overrides, name, problem) => {
    const h = await health({ ...env, ...overrides });
    expect(h.status).toBe(200);
    expect(h.body.checks.config.ok).toBe(false);
    expect(h.body.checks.config.problems).toContainEqual({ var: name, problem, blocks: false });
  });

  it.each([
    [{ PARTNERS_ENABLED: "true", PARTNER_WALLETS: ['{"textkit":"0x1"}'] }, "PARTNER_WALLETS"],
    [{ PARTNERS_ENABLED: "true", PARTNER_PRICE_MULTIPLIER: [3] }, "PARTNER_PRICE_MULTIPLIER"],
    [{ STRIPE_API_BASE: ["http://127.0.0.1:12111"] }, "STRIPE_API_BASE"],
  ])(
    "%j: a table or array where it would move money or a key is said to be refused, not unset",
    async (overrides, name) => {
      const errors = vi.spyOn(console, "error").mockImplementation(() => {});
      const h = await health({ ...paidEnv(), ...overrides });
      errors.mockRestore();
      const said = h.body.checks.config.problems.filter((p) => p.var === name).map((p) => p.problem);
      expect(said).toContain(
        "not text: a number or boolean is read as its text, a table or array refused (write it as a JSON string); quote it in wrangler.toml",
      );
      expect(said.join(" ")).not.toContain("as unset");
    },
  );

  it.each(["wss://facilitator.example/v2/KEY", "ftp://facilitator.example"])(
    "FACILITATOR_URL %s, another scheme, while x402 sells: 503 naming it (the gate takes it, then no /supported read succeeds)",
    async (value) => {
      const h = await health({ ...paidEnv(), FACILITATOR_URL: value });
      expect(h.status).toBe(503);
      expect(h.body.checks.config.problems).toContainEqual({
        var: "FACILITATOR_URL",
        problem: "not an http(s) URL: the facilitator cannot be read, paid calls answer 503",
        blocks: true,
      });
      expect(h.text).not.toContain("facilitator.example");
      // Nothing sold over x402: nothing refused, nothing said.
      expect(vars(await health({ ...env, FREE_BETA: "true", FACILITATOR_URL: value }))).not.toContain(
        "FACILITATOR_URL",
      );
    },
  );

  it("a Stripe key of the other mode turns cards off: 503 naming STRIPE_SECRET_KEY, never the key", async () => {
    const secret = "sk_live_health_never_shows_this_0000";
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const h = await health({ ...env, STRIPE_SECRET_KEY: secret });
    errors.mockRestore();
    expect(h.status).toBe(503);
    expect(h.body.checks.config.problems).toContainEqual(
      expect.objectContaining({ var: "STRIPE_SECRET_KEY", blocks: true }),
    );
    expect(h.text).not.toContain("health_never_shows_this");
  });

  it("unreadable partner configuration: 503 naming the var", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const h = await health({ ...env, PARTNER_BASE_URLS: '{"textkit":"host:9999"}' });
    errors.mockRestore();
    expect(h.status).toBe(503);
    expect(h.body.checks.config.problems).toContainEqual(
      expect.objectContaining({ var: "PARTNER_BASE_URLS", blocks: true }),
    );
  });

  // Each var that config-problems.ts finds by name in an error's text: a message that stops naming
  // its var would fall back to another name silently.
  it.each([
    ["X402_NETWORK", { X402_NETWORK: "base" }, "paid"],
    ["USDC_ADDRESS", { USDC_ADDRESS: "0x1234" }, "paid"],
    ["FACILITATOR_URL", { FACILITATOR_URL: "not a url" }, "paid"],
    ["STRIPE_MODE", { STRIPE_MODE: "production", CARDPAY_ENABLED: "true" }, "cards"],
    ["PARTNER_WALLETS", { PARTNER_WALLETS: '{"textkit":"nope"}' }, "partners"],
    ["PARTNER_PRICE_MULTIPLIER", { PARTNER_PRICE_MULTIPLIER: "2" }, "partners"],
    ["PARTNER_BASE_URLS", { PARTNER_BASE_URLS: '{"textkit":"host:9999"}' }, "partners"],
  ])("a refusal by %s is listed under that name, blocking", async (name, overrides, base) => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const h = await health({ ...(base === "paid" ? paidEnv() : env), ...overrides });
    errors.mockRestore();
    expect(h.status).toBe(503);
    expect(h.body.checks.config.problems.filter((p) => p.blocks).map((p) => p.var)).toEqual([name]);
  });

  it("a partner refusal names its var in the error text the mapping reads (the multiplier is also the fallback)", () => {
    const refused = partnerConfig({ ...env, PARTNER_PRICE_MULTIPLIER: "2" });
    expect("error" in refused && refused.error).toMatch(/\bPARTNER_PRICE_MULTIPLIER\b/);
  });

  it("no value of any var or secret is ever in the answer, however wrong", async () => {
    const marker = (name: string) => `zz${name.toLowerCase()}marker`;
    const names = [
      "PAY_TO",
      "USDC_ADDRESS",
      "X402_NETWORK",
      "FACILITATOR_URL",
      "BASE_URL",
      "STRIPE_SECRET_KEY",
      "STRIPE_WEBHOOK_SECRET",
      "STRIPE_API_BASE",
      "ADMIN_TOKEN",
      "PARTNER_PAYER_KEY",
      "RECEIPT_SIGNING_KEY",
      "RPC_URL",
      "PARTNER_BASE_URLS",
      "PARTNER_WALLETS",
      "PARTNER_PRICE_MULTIPLIER",
      "CALL_LOG_FLUSH_MS",
      "X402_ENABLED",
    ];
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const h = await health({ ...paidEnv(), ...Object.fromEntries(names.map((n) => [n, marker(n)])) });
    errors.mockRestore();
    expect(h.status).toBe(503);
    expect(vars(h).length).toBeGreaterThan(5);
    expect(h.text).not.toContain("marker");
  });

  it("says what the x402 gate last saw of the facilitator, without reading it: 503 while its failed read backs off, 200 after", async () => {
    // A configuration of this test's own (the gate is kept per configuration and isolate).
    const e = { ...paidEnv(), FACILITATOR_URL: `http://127.0.0.1:9/health-${crypto.randomUUID()}` };
    const before = await health(e);
    expect(before.status).toBe(200);
    expect(before.body.checks).toMatchObject({ facilitator: { ok: true } });
    vi.spyOn(console, "error").mockImplementation(() => {});
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const paid = await createApp().fetch(
      new Request("https://skills.test/api/skills/sha256", { method: "POST", body: '{"text":"a"}' }),
      e,
    );
    vi.restoreAllMocks();
    expect(paid.status).toBe(503);
    const after = await health(e);
    expect(after.status).toBe(503);
    expect(after.body.status).toBe("degraded");
    expect(after.body.checks).toMatchObject({
      facilitator: {
        ok: false,
        error:
          "the facilitator's /supported could not be read: paid calls answer 503 (log: facilitator /supported failed)",
      },
    });
    expect(after.text).not.toContain("127.0.0.1:9");
    // The back-off over (at most FAILED_READ_BACKOFF_MS), no paid call since: the next one asks
    // again, so /health no longer calls the facilitator down on what it saw before.
    const later = Date.now() + FAILED_READ_BACKOFF_MS + 1;
    vi.spyOn(Date, "now").mockReturnValue(later);
    const quiet = await health(e);
    vi.restoreAllMocks();
    expect(quiet.status).toBe(200);
    expect(quiet.body.checks).toMatchObject({ facilitator: { ok: true } });
  });

  it("the facilitator check says nothing of whether a paid call ran on this isolate", async () => {
    const good = paidEnv();
    const idle = await health(good);
    await createApp().fetch(
      new Request("https://skills.test/api/skills/sha256", { method: "POST", body: '{"text":"a"}' }),
      good,
    );
    const used = await health(good);
    expect(used.body.checks.facilitator).toEqual(idle.body.checks.facilitator);
    expect(used.body.checks.facilitator).toEqual({ ok: true });
  });

  it("without the DB or KV binding: 503, the check says which binding is missing", async () => {
    for (const name of ["DB", "KV"]) {
      const e: Record<string, unknown> = { ...env };
      delete e[name];
      const h = await health(e);
      expect(h.status).toBe(503);
      expect(h.body.checks[name === "DB" ? "d1" : "kv"]).toEqual({
        ok: false,
        ms: 0,
        error: `the ${name} binding is missing`,
      });
    }
  });
});
