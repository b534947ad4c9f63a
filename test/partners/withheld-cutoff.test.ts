import { env } from "cloudflare:test";
import { x402Client } from "@x402/core/client";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentPayload } from "@x402/core/types";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { ORIGIN } from "../helpers";
import { FACILITATOR, paidCall, send, stubNetwork, tryEnv, upstreamRows, x402Partner } from "./network";

// A charged partner call whose partner failed after taking our authorization, when the
// authorization's record could not be written on the answer's path: what keeps the share kept back
// from being lost if the Worker is cut off after the answer (a client gone while the refund is
// sent, waitUntil's end), and what a person is told.
afterEach(() => vi.restoreAllMocks());
const PATH = "/api/partners/pricefeed/try/price_coin?coin=eth";

function failing(query: string, times = Number.POSITIVE_INFINITY) {
  let failed = 0;
  return new Proxy(env.DB, {
    get(target, key) {
      if (key === "prepare")
        return (sql: string) => {
          if (sql.includes(query) && failed++ < times) throw new Error("D1_ERROR: simulated outage");
          return target.prepare(sql);
        };
      const value = Reflect.get(target, key);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
const refundRow = (id: string) =>
  env.DB.prepare(
    "SELECT amount_micro, withheld_micro, status, hold, valid_before FROM refunds WHERE request_id = ?1",
  )
    .bind(id)
    .first<Record<string, unknown>>();

/** A paid call answered with an ExecutionContext whose waitUntil only collects (as workerd would keep them). */
async function paidCallWithCtx(e: object, ctx: ExecutionContext) {
  const challenge = await send(PATH, {}, e);
  expect(challenge.status).toBe(402);
  const required = decodePaymentRequiredHeader(challenge.headers.get("payment-required") ?? "");
  const caller = registerExactEvmScheme(new x402Client(), {
    signer: privateKeyToAccount(generatePrivateKey()),
  });
  const headers = new Headers();
  headers.set("payment-signature", encodePaymentSignatureHeader(await caller.createPaymentPayload(required)));
  return createApp().fetch(new Request(`${ORIGIN}${PATH}`, { headers }), e, ctx);
}
const collectingCtx = (registered: Promise<unknown>[]) =>
  ({
    waitUntil: (p: Promise<unknown>) => registered.push(p),
    passThroughOnException() {},
    props: {},
  }) as unknown as ExecutionContext;

/** Makes the facilitator's settle of a refund hang until `release` is called. */
function hangRefundSettles() {
  const spy = globalThis.fetch as unknown as ReturnType<typeof vi.fn>;
  const impl = spy.getMockImplementation() as (i: RequestInfo | URL, init?: RequestInit) => Promise<Response>;
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let reached!: () => void;
  const refundReached = new Promise<void>((r) => (reached = r));
  spy.mockImplementation(async (input: RequestInfo | URL, init?: RequestInit) => {
    const req = new Request(input, init);
    if (req.url.startsWith(`${FACILITATOR}/settle`)) {
      const { paymentPayload } = await req.clone().json<{ paymentPayload: PaymentPayload }>();
      if (paymentPayload.resource?.url.startsWith("refund:")) {
        reached();
        await released;
      }
    }
    return impl(req);
  });
  return { release, refundReached };
}

describe("a share kept back for an authorization whose record failed on the answer's path", () => {
  it("its record's retry is handed over before the refund is sent, and the refund is recorded with its held listing", async () => {
    stubNetwork(x402Partner("10000", () => Response.json({ error: "down" }, { status: 500 })));
    const { release, refundReached } = hangRefundSettles();
    const registered: Promise<unknown>[] = [];
    const e = { ...tryEnv, DB: failing("INSERT INTO upstream_payments", 1) };
    const answering = paidCallWithCtx(e, collectingCtx(registered));
    // The refund's send is in flight (up to the facilitator's 45 s): a client that gives up now
    // cancels the handler, and anything not yet handed to waitUntil never runs.
    await refundReached;
    const base = await env.DB.prepare(
      "SELECT request_id, withheld_micro, status FROM refunds WHERE request_id NOT LIKE '%:withheld' ORDER BY id DESC LIMIT 1",
    ).first<Record<string, unknown>>();
    const requestId = String(base?.request_id);
    expect(base).toMatchObject({ withheld_micro: 10000, status: "owed" });
    expect(registered.length).toBeGreaterThan(0);
    expect(await refundRow(`${requestId}:withheld`)).toMatchObject({
      amount_micro: 10000,
      status: "owed",
      hold: expect.stringMatching(/^kept back in doubt:/),
    });
    release();
    expect((await answering).status).toBe(502);
    await Promise.all(registered);
    expect(await upstreamRows(requestId)).toEqual([expect.objectContaining({ amount_micro: 10000 })]);
  });

  it("the listing carries the refund's own hold: a settlement that disagrees about the payer is in doubt for both", async () => {
    stubNetwork(x402Partner("10000", () => Response.json({ error: "down" }, { status: 500 })));
    const spy = globalThis.fetch as unknown as ReturnType<typeof vi.fn>;
    const impl = spy.getMockImplementation() as (
      i: RequestInfo | URL,
      init?: RequestInit,
    ) => Promise<Response>;
    spy.mockImplementation(async (input: RequestInfo | URL, init?: RequestInit) => {
      const req = new Request(input, init);
      const res = await impl(req.clone());
      if (req.url.startsWith(`${FACILITATOR}/settle`)) {
        const { paymentPayload } = await req.json<{ paymentPayload: PaymentPayload }>();
        if (!paymentPayload.resource?.url.startsWith("refund:")) {
          const j = await res.json<Record<string, unknown>>();
          return Response.json({ ...j, payer: "0x9999999999999999999999999999999999999999" });
        }
      }
      return res;
    });
    const res = await paidCall(PATH, {}, { ...tryEnv, DB: failing("INSERT INTO upstream_payments") });
    const requestId = res.headers.get("x-request-id") ?? "";
    expect(String((await refundRow(requestId))?.hold)).toMatch(/disagrees/);
    expect(String((await refundRow(`${requestId}:withheld`))?.hold)).toMatch(
      /^kept back in doubt:.*disagrees/,
    );
  });
});
