import { env } from "cloudflare:test";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import {
  FacilitatorResponseError,
  type PaymentPayload,
  type PaymentRequirements,
  SettleError,
} from "@x402/core/types";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { publicConfig } from "../../src/config";
import { refundCaller } from "../../src/payments/refunds";
import { facilitatorClient } from "../../src/payments/x402-gate";
import { unsignedPayment } from "../fixtures/payments";
import { FIXTURE } from "../fixtures/upstream-requests";
import { PAYER, row } from "../payments/refund-fixtures";

// A facilitator keyed in its path or query (`https://…/v2/<key>`) whose error pages quote the path
// they were asked for, as Express and nginx do ("Cannot GET /v2/<key>/supported"): the key must
// reach neither our log lines nor the caller's 503 (docs/PRIVACY.md, "What logs hold").
afterEach(() => {
  vi.restoreAllMocks();
});

const PATH_KEY = "PATHKEY0123456789";
const QUERY_KEY = "QUERYKEY0123456789";

/**
 * The facilitator at `url` (on the fixture's origin): the endpoints in `served` are the fixture
 * double's; any other answers `settle` for /settle if given, else a 404 page quoting the path and
 * query asked for.
 */
function keyedFacilitator(
  url: string,
  served: ("supported" | "verify")[],
  settle?: (quoted: string) => Response,
) {
  const real = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const req = new Request(input, init);
    if (!req.url.startsWith(url)) return real(input, init);
    const { pathname, search } = new URL(req.url);
    const endpoint = pathname.split("/").pop() as string;
    if ((served as string[]).includes(endpoint))
      return real(new Request(`${FIXTURE}/facilitator/${endpoint}`, req));
    const quoted = `Cannot ${req.method} ${pathname}${search}`;
    if (settle && endpoint === "settle") return settle(quoted);
    return new Response(quoted, { status: 404 });
  });
}

const post = (facilitator: string, headers: Record<string, string> = {}) =>
  createApp().fetch(
    new Request("https://skills.test/api/skills/sha256", { method: "POST", headers, body: '{"text":"a"}' }),
    { ...env, FREE_BETA: "false", FACILITATOR_URL: facilitator },
  );

/** The route's offer, then a payment for it (from a payer the facilitator double settles). */
async function paid(facilitator: string) {
  const offer = await post(facilitator);
  expect(offer.status).toBe(402);
  const required = decodePaymentRequiredHeader(offer.headers.get("payment-required") as string);
  const { payload } = unsignedPayment(required, "0x00000000000000000000000000000000000a0001");
  return post(facilitator, { "payment-signature": encodePaymentSignatureHeader(payload as PaymentPayload) });
}

describe("a facilitator's key quoted by its own error page", () => {
  it.each([
    ["in the path", `${FIXTURE}/v2/${PATH_KEY}`, PATH_KEY],
    ["in the query", `${FIXTURE}/x402?apikey=${QUERY_KEY}`, QUERY_KEY],
  ])("%s: the facilitator /supported failed line names the failure, not the key", async (_, url, key) => {
    keyedFacilitator(url, []);
    const error = vi.spyOn(console, "error").mockImplementation(() => {});
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    expect((await post(url)).status).toBe(503);
    // @x402/core's own plain-text warning quotes the error it was handed: redacted before.
    const library = warn.mock.calls.map((args) => args.map(String).join(" "));
    expect(library.filter((l) => l.includes("Failed to fetch supported kinds"))).toHaveLength(1);
    for (const line of library) expect(line).not.toContain(key);
    const ours = error.mock.calls
      .map((args) => String(args[0]))
      .filter((l) => l.includes("facilitator /supported failed"));
    expect(ours).toHaveLength(1);
    expect(ours[0]).not.toContain(key);
    expect(JSON.parse(ours[0] as string).error).toMatch(/404.*Cannot GET .*<redacted>/);
  });

  it("the 503 facilitator_unavailable quotes the facilitator's error without its key", async () => {
    // Another URL than above: the gate keeps the failed read's back-off per facilitator.
    const url = `${FIXTURE}/v3/${PATH_KEY}`;
    keyedFacilitator(url, ["supported"]);
    const res = await paid(url);
    expect(res.status).toBe(503);
    const body = await res.json<{ reason: string; detail: string }>();
    expect(body.reason).toBe("facilitator_unavailable");
    expect(body.detail).toMatch(/404.*Cannot POST .*<redacted>/);
    expect(body.detail).not.toContain(PATH_KEY);
  });
});

describe("a settlement the facilitator did not confirm, its answer quoting the keyed path", () => {
  it.each([
    ["a 404 page", "v9", (quoted: string) => new Response(quoted, { status: 404 })],
    [
      "a 500 settle answer",
      "v10",
      (quoted: string) =>
        Response.json(
          {
            success: false,
            errorReason: "unexpected_settle_error",
            errorMessage: quoted,
            transaction: "",
            network: "eip155:8453",
          },
          { status: 500 },
        ),
    ],
  ])(
    "%s: the 502, its PAYMENT-RESPONSE and our log line name the failure, not the key",
    async (_, version, settle) => {
      const url = `${FIXTURE}/${version}/${PATH_KEY}`;
      keyedFacilitator(url, ["supported", "verify"], settle);
      const error = vi.spyOn(console, "error").mockImplementation(() => {});
      const res = await paid(url);
      expect(res.status).toBe(502);
      const body = await res.json<{ reason: string; facilitator_reason: string }>();
      expect(body.reason).toBe("settlement_unconfirmed");
      const header = res.headers.get("payment-response");
      const logged = error.mock.calls.map((args) => args.map(String).join(" "));
      expect(logged.filter((l) => l.includes("settlement unconfirmed"))).toHaveLength(1);
      const seen = [JSON.stringify(body), header ? atob(header) : "", ...logged];
      for (const text of seen) expect(text).not.toContain(PATH_KEY);
      // Still says what failed, with the key's place marked.
      expect(seen.join("\n")).toMatch(/Cannot POST .*<redacted>/);
    },
  );
});

describe("the facilitator client's errors keep their kind, without the key", () => {
  const client = (url: string) => {
    const e = { ...env, FACILITATOR_URL: url };
    return facilitatorClient(e, publicConfig(e, "https://skills.test"));
  };
  const requirements = {
    scheme: "exact",
    network: "eip155:8453",
    asset: env.USDC_ADDRESS,
    amount: "1000",
    payTo: "0x00000000000000000000000000000000000000fa",
    maxTimeoutSeconds: 60,
    extra: {},
  } as PaymentRequirements;
  const payload = { x402Version: 2, accepted: requirements, payload: {} } as unknown as PaymentPayload;

  it("a settle answer sent with a 500 stays a SettleError, its reason marked with the status", async () => {
    const url = `${FIXTURE}/v12/${PATH_KEY}`;
    keyedFacilitator(url, [], (quoted) =>
      Response.json(
        { success: false, errorReason: "unexpected_settle_error", errorMessage: quoted },
        { status: 500 },
      ),
    );
    const thrown = await client(url)
      .settle(payload, requirements)
      .catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(SettleError);
    expect(thrown).toMatchObject({ statusCode: 500, errorReason: "unexpected_settle_error (HTTP 500)" });
    expect((thrown as SettleError).errorMessage).toBe("Cannot POST /<redacted>/settle");
  });

  it("a refused settle keeps its transaction, payer and network (settlement.ts reads a refusal with a hash as unconfirmed)", async () => {
    const url = `${FIXTURE}/v15/${PATH_KEY}`;
    const answer = {
      errorReason: "insufficient_funds",
      transaction: `0x${"ab".repeat(32)}`,
      payer: "0x00000000000000000000000000000000000000b0",
      network: "eip155:8453",
    };
    keyedFacilitator(url, [], (quoted) =>
      Response.json({ success: false, ...answer, errorMessage: quoted }, { status: 400 }),
    );
    const thrown = await client(url)
      .settle(payload, requirements)
      .catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(SettleError);
    expect(thrown).toMatchObject({
      statusCode: 400,
      ...answer,
      errorMessage: "Cannot POST /<redacted>/settle",
    });
  });

  it("a settle answered 200 with no JSON stays a FacilitatorResponseError (the gate's facilitator error)", async () => {
    const url = `${FIXTURE}/v13/${PATH_KEY}`;
    keyedFacilitator(url, [], (quoted) => new Response(quoted, { status: 200 }));
    const thrown = await client(url)
      .settle(payload, requirements)
      .catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(FacilitatorResponseError);
    expect((thrown as Error).message).toMatch(/invalid JSON: Cannot POST \/<redacted>\/settle/);
  });

  it("a verify without a verdict is a FacilitatorResponseError quoting the page without the key", async () => {
    const url = `${FIXTURE}/v14/${PATH_KEY}`;
    keyedFacilitator(url, []);
    const thrown = await client(url)
      .verify(payload, requirements)
      .catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(FacilitatorResponseError);
    expect((thrown as Error).message).toMatch(/404.*Cannot POST \/<redacted>\/verify/);
  });
});

describe("a refund's send error, kept in refunds.error and shown on the dashboard", () => {
  it("keeps the facilitator's answer without its key", async () => {
    const url = `${FIXTURE}/v4/${PATH_KEY}`;
    keyedFacilitator(url, ["supported"]);
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const requestId = crypto.randomUUID();
    const e = { ...env, FACILITATOR_URL: url, PARTNER_PAYER_KEY: `0x${"11".repeat(32)}` };
    const out = await refundCaller(e, {
      requestId,
      payer: PAYER,
      network: env.X402_NETWORK,
      asset: env.USDC_ADDRESS,
      paidMicros: 30000n,
      withheldMicros: 0n,
      reason: "the skill failed after the caller was charged",
    });
    expect(out.status).toBe("owed");
    const error = (await row(requestId))?.error;
    expect(error).toMatch(/404.*Cannot POST .*<redacted>/);
    expect(error).not.toContain(PATH_KEY);
  });
});
