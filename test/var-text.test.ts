import { env } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { createApp } from "../src/app";
import { partnersEnabled, publicConfig, redactSecrets, stripeSetupProblem, x402Selling } from "../src/config";
import { netConfig } from "../src/net/config";
import { partnerConfig } from "../src/partners/config";
import { reconcile } from "../src/payments/reconcile";
import { varText } from "../src/var-text";
import { cronRun } from "./fixtures/cron";
import { mcpToolCall, paidEnv } from "./helpers";

// An unquoted number or boolean in [vars], or a TOML table or array, reaches the Worker as a JSON
// binding, not a string (deploy-check refuses them; a dashboard edit does not meet it).
const UNTYPED: unknown[] = [5, true, { a: 1 }, []];

const requests = () => [
  new Request("https://skills.test/api/skills/sha256", { method: "POST", body: '{"text":"a"}' }),
  mcpToolCall("sha256", { text: "a" }),
  new Request("https://skills.test/api/cardpay/checkout", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: '{"skill_id":"sha256","quantity":10}',
  }),
  new Request("https://skills.test/llms.txt"),
  new Request("https://skills.test/.well-known/x402"),
  new Request("https://skills.test/.well-known/did.json"),
  new Request("https://skills.test/api/partners"),
  new Request("https://skills.test/"),
];

describe("a var that is not text is read as its text, never a 500", () => {
  it.each([
    "BASE_URL",
    "STRIPE_API_BASE",
    "X402_OWNERSHIP_PROOFS",
    "X402LIST_TOKENS",
    "RATE_LIMIT_HEAVY",
    "RECEIPT_RETIRED_KEYS",
  ])("%s unquoted: paid call, MCP, checkout, documents and did.json answer without a 500", async (name) => {
    for (const value of UNTYPED) {
      const e = { ...paidEnv(), [name]: value };
      for (const req of requests()) {
        const res = await createApp().fetch(req, e);
        expect(res.status, `${name}=${JSON.stringify(value)} ${req.url}`).not.toBe(500);
      }
    }
  });

  it.each([
    "FACILITATOR_URL",
    "RPC_URL",
    "PARTNER_PAYER_KEY",
    "STRIPE_SECRET_KEY",
    "ADMIN_TOKEN",
    "CDP_API_KEY_SECRET",
  ])(
    "%s unquoted: log lines are still redacted (the Cron and the facilitator client redact every line)",
    (name) => {
      for (const value of UNTYPED)
        expect(redactSecrets("a line", { ...env, [name]: value } as typeof env)).toBe("a line");
    },
  );

  // (A STRIPE_SECRET_KEY that is no key fails the run on purpose: the sweep names it.)
  it.each(["FACILITATOR_URL", "PARTNER_PAYER_KEY"])(
    "%s unquoted: the Cron runs and logs, no throw",
    async (name) => {
      for (const value of UNTYPED) {
        const { thrown, lines } = await cronRun({ ...env, [name]: value });
        expect(thrown, `${name}=${JSON.stringify(value)}`).toBe("");
        expect(lines.some((l) => l.includes('"reconcile"'))).toBe(true);
      }
    },
  );

  it("RPC_URL as a TOML array (empty text) is unset: reconciliation skips, saying so", async () => {
    const summary = await reconcile({ ...env, RPC_URL: [] } as unknown as typeof env);
    expect(summary.skipped).toBe("RPC_URL is not set");
  });

  it.each(["BASE_URL", "DOH_RESOLVER", "FETCH_ALLOW_HOSTS", "WIKIPEDIA_API_BASE"])(
    "%s unquoted: the network skills' configuration reads it as text",
    (name) => {
      for (const value of UNTYPED)
        expect(() => netConfig({ ...env, [name]: value } as typeof env)).not.toThrow();
    },
  );
});

describe("a switch set to a TOML table or array is off, as it always was, never the default", () => {
  const post = (e: Record<string, unknown>) =>
    createApp().fetch(
      new Request("https://skills.test/api/skills/sha256", { method: "POST", body: '{"text":"a"}' }),
      e,
    );

  it.each([[{}], [[]], [{ on: true }], [["true"]]])(
    "X402_ENABLED = %j: a 402 without an x402 offer",
    async (value) => {
      const res = await post({ ...paidEnv(), X402_ENABLED: value });
      expect(res.status).toBe(402);
      expect(res.headers.get("payment-required")).toBeNull();
    },
  );

  it.each([[{}], [[]]])(
    "PARTNERS_ENABLED = %j: partners are off (the operating wallet pays none)",
    async (value) => {
      const log = vi.spyOn(console, "log").mockImplementation(() => {});
      const res = await createApp().fetch(new Request("https://skills.test/api/partners"), {
        ...paidEnv(),
        PARTNERS_ENABLED: value,
      });
      log.mockRestore();
      expect(res.status).toBe(503);
      expect(partnersEnabled({ ...env, PARTNERS_ENABLED: value } as unknown as typeof env)).toBe(false);
    },
  );

  it.each([[{}], [[]]])("CARDPAY_ENABLED = %j: card payments are off", async (value) => {
    const cfg = publicConfig(
      { ...paidEnv(), CARDPAY_ENABLED: value } as unknown as typeof env,
      "https://skills.test/",
    );
    expect(cfg.cardpayEnabled).toBe(false);
    expect(publicConfig(paidEnv() as unknown as typeof env, "https://skills.test/").cardpayEnabled).toBe(
      true,
    );
  });

  it("FREE_BETA = {} is off (the default), so sales go on", () => {
    expect(x402Selling({ ...env, FREE_BETA: {} } as unknown as typeof env)).toBe(true);
  });
});

describe("a TOML table or array in a text var is unset: never published, never counted as set", () => {
  it.each([
    ["CONTACT_EMAIL", "/.well-known/x402"],
    ["CONTACT_EMAIL", "/openapi.json"],
    ["X402_OWNERSHIP_PROOFS", "/.well-known/x402"],
    ["X402_OWNERSHIP_PROOFS", "/openapi.json"],
    ["X402LIST_TOKENS", "/.well-known/x402list.txt"],
  ])("%s as a table or array: %s publishes no [object Object]", async (name, path) => {
    for (const value of [{ a: 1 }, [{ a: 1 }]]) {
      const res = await createApp().fetch(new Request(`https://skills.test${path}`), {
        ...paidEnv(),
        [name]: value,
      });
      expect(res.status).toBe(200);
      expect(await res.text(), `${name}=${JSON.stringify(value)}`).not.toContain("[object Object]");
    }
  });

  it("RPC_URL as a table is unset: reconciliation skips, saying so", async () => {
    const summary = await reconcile({ ...env, RPC_URL: { url: "x" } } as unknown as typeof env);
    expect(summary.skipped).toBe("RPC_URL is not set");
  });

  it("varText: text as given, a number or boolean as its text, a table or array as unset", () => {
    expect([" a ", 5, false, { a: 1 }, ["a"], [], null, undefined].map(varText)).toEqual([
      " a ",
      "5",
      "false",
      "",
      "",
      "",
      "",
      "",
    ]);
  });
});

describe("a table or array where a check and its user would read it differently is refused as not text", () => {
  it("STRIPE_API_BASE = [its URL]: refused (cards off, checkout 503), never passed while the client used api.stripe.com", async () => {
    const e = { ...paidEnv(), STRIPE_API_BASE: [env.STRIPE_API_BASE] };
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    expect(stripeSetupProblem(e as unknown as typeof env)).toEqual({
      kind: "api base",
      error: "STRIPE_API_BASE is not text",
    });
    expect(publicConfig(e as unknown as typeof env, "https://skills.test/").cardpayEnabled).toBe(false);
    const res = await createApp().fetch(
      new Request("https://skills.test/api/cardpay/checkout", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: '{"skill_id":"sha256"}',
      }),
      e,
    );
    errors.mockRestore();
    expect(res.status).toBe(503);
  });

  it.each([
    [
      "PARTNER_WALLETS",
      [`{"textkit":"0x${"ab".repeat(20)}"}`],
      "PARTNER_WALLETS is not text (write it as a JSON string)",
    ],
    [
      "PARTNER_BASE_URLS",
      ['{"textkit":"https://textkit.example"}'],
      "PARTNER_BASE_URLS is not text (write it as a JSON string)",
    ],
    ["PARTNER_WALLETS", {}, "PARTNER_WALLETS is not text (write it as a JSON string)"],
    ["PARTNER_PRICE_MULTIPLIER", [3], "PARTNER_PRICE_MULTIPLIER is not text (quote it)"],
    ["PARTNER_PRICE_MULTIPLIER", [], "PARTNER_PRICE_MULTIPLIER is not text (quote it)"],
  ])(
    "%s = %j: refused by name (partner routes 503), never parsed from its elements' text",
    async (name, value, error) => {
      const e = { ...paidEnv(), [name]: value } as unknown as typeof env;
      expect(partnerConfig(e)).toEqual({ error });
      const errors = vi.spyOn(console, "error").mockImplementation(() => {});
      const res = await createApp().fetch(new Request("https://skills.test/api/partners"), e);
      errors.mockRestore();
      expect(res.status).toBe(503);
    },
  );
});
