import { env } from "cloudflare:test";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentPayload } from "@x402/core/types";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { refundCaller } from "../../src/payments/refunds";
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
 * The facilitator at `url` (on the fixture's origin): its /supported is the fixture double's when
 * `supported`, else a 404 page quoting the path and query asked for; its /verify always is one.
 */
function keyedFacilitator(url: string, supported: boolean) {
  const real = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const req = new Request(input, init);
    if (!req.url.startsWith(url)) return real(input, init);
    const { pathname, search } = new URL(req.url);
    if (supported && req.url.endsWith("/supported")) return real(`${FIXTURE}/facilitator/supported`);
    return new Response(`Cannot ${req.method} ${pathname}${search}`, { status: 404 });
  });
}

const post = (facilitator: string, headers: Record<string, string> = {}) =>
  createApp().fetch(
    new Request("https://skills.test/api/skills/sha256", { method: "POST", headers, body: '{"text":"a"}' }),
    { ...env, FREE_BETA: "false", FACILITATOR_URL: facilitator },
  );

describe("a facilitator's key quoted by its own error page", () => {
  it.each([
    ["in the path", `${FIXTURE}/v2/${PATH_KEY}`, PATH_KEY],
    ["in the query", `${FIXTURE}/x402?apikey=${QUERY_KEY}`, QUERY_KEY],
  ])("%s: the facilitator /supported failed line names the failure, not the key", async (_, url, key) => {
    keyedFacilitator(url, false);
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
    keyedFacilitator(url, true);
    const offer = await post(url);
    expect(offer.status).toBe(402);
    const required = decodePaymentRequiredHeader(offer.headers.get("payment-required") as string);
    const { payload } = unsignedPayment(required, "0x00000000000000000000000000000000000a0001");
    const res = await post(url, {
      "payment-signature": encodePaymentSignatureHeader(payload as PaymentPayload),
    });
    expect(res.status).toBe(503);
    const body = await res.json<{ reason: string; detail: string }>();
    expect(body.reason).toBe("facilitator_unavailable");
    expect(body.detail).toMatch(/404.*Cannot POST .*<redacted>/);
    expect(body.detail).not.toContain(PATH_KEY);
  });
});

describe("a refund's send error, kept in refunds.error and shown on the dashboard", () => {
  it("keeps the facilitator's answer without its key", async () => {
    const url = `${FIXTURE}/v4/${PATH_KEY}`;
    keyedFacilitator(url, true);
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
