import { env } from "cloudflare:test";
import { x402Client } from "@x402/core/client";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentPayload } from "@x402/core/types";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { reconcile } from "../../src/payments/reconcile";
import type { ChainReader } from "../../src/payments/reconcile-chain";
import { applyUpstream, type UpstreamRow } from "../../src/payments/reconcile-store";
import { resolveRefundByHand } from "../../src/payments/refund-by-hand";
import { ORIGIN } from "../helpers";
import {
  FACILITATOR,
  PARTNER_TX,
  paidCall,
  receipt,
  send,
  stubNetwork,
  tryEnv,
  upstreamRows,
  x402Partner,
} from "./network";

/**
 * An error of ours (a bug, storage), not the partner's, after the caller's payment settled: the
 * caller is refunded less what an authorization of ours handed over for this call can still move,
 * and that too once reconciliation finds it expired unused. Nothing is kept back for an
 * authorization never signed, and what cannot be known is listed for a person, never kept quietly.
 *
 * pricefeed's price_coin: listed at 0.02 to the partner, sold at 0.06.
 */

afterEach(() => {
  vi.restoreAllMocks();
});

const PATH = "/api/partners/pricefeed/try/price_coin?coin=eth";

/** A chain on which these requests' upstream authorizations were never used and have expired. */
async function expiredUnused(...requestIds: string[]): Promise<ChainReader> {
  const nonces = new Set<string>();
  for (const id of requestIds)
    for (const u of await upstreamRows(id)) nonces.add(String(u.auth_nonce).toLowerCase());
  return {
    chainId: async () => Number(env.X402_NETWORK.split(":")[1]),
    head: async () => ({ number: 1e7, timestamp: Math.floor(Date.now() / 1000) + 10_000, blockSeconds: 2 }),
    blockTime: async (n) => Math.floor(Date.now() / 1000) + 10_000 - (1e7 - n) * 2,
    authorizationUsed: async (_asset, _who, nonce) => !nonces.has(nonce.toLowerCase()),
    findUse: async () => undefined,
  };
}

async function reconcileUntilDecided(reader: ChainReader, requestId: string) {
  for (let run = 0; run < 20; run++) {
    await reconcile(tryEnv as never, reader);
    if ((await upstreamRows(requestId)).every((u) => u.chain_status !== null)) return;
  }
  throw new Error("upstream rows still undecided after 20 runs");
}

const refundRow = (requestId: string) =>
  env.DB.prepare(
    "SELECT payer, amount_micro, withheld_micro, status, hold, valid_before FROM refunds WHERE request_id = ?1",
  )
    .bind(requestId)
    .first<Record<string, unknown>>();

/**
 * The caller's refund of `refunded` keeping `kept` back, and that share's listing for a person: a
 * `:withheld` row to the same payer, owed, never sent (a hold says why). Both rows, for more checks.
 */
async function keptInDoubt(requestId: string, refunded: number, kept: number) {
  const first = await refundRow(requestId);
  expect(first).toMatchObject({ amount_micro: refunded, withheld_micro: kept });
  const listing = await refundRow(`${requestId}:withheld`);
  expect(listing).toMatchObject({
    payer: first?.payer,
    amount_micro: kept,
    status: "owed",
    valid_before: null,
  });
  return { first, kept: listing };
}

type Authorization = { from: string; to: string; value: string };
/** What the facilitator was asked to pay this payer (refunds), in micro-USDC. */
const refundsTo = (settled: PaymentPayload[], payer: unknown) =>
  settled
    .map((p) => (p.payload as { authorization: Authorization }).authorization)
    .filter((a) => a.to.toLowerCase() === String(payer).toLowerCase())
    .map((a) => Number(a.value));
const sum = (values: number[]) => values.reduce((s, v) => s + v, 0);

const payoutsReport = async () =>
  (
    await send("/api/admin/payouts", { headers: { authorization: "Bearer t0ken-0123456789abcdefghij" } })
  ).json<{
    withheld_not_returned: Record<string, unknown>[];
    refunds: Record<string, unknown>[];
  }>();

/** A partner's paid answer whose `header` throws when read (after its body was read, with `afterBody`). */
function answerWhoseHeaderThrows(res: Response, header: string, afterBody = false) {
  const real = res.headers;
  const headers = new Proxy(real, {
    get(target, key) {
      if (key === "get")
        return (name: string) => {
          if (name.toLowerCase() === header && (!afterBody || res.bodyUsed))
            throw new Error("simulated bug reading the partner's answer");
          return target.get(name);
        };
      const value = Reflect.get(target, key);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  Object.defineProperty(res, "headers", { value: headers });
  return res;
}

/** The test database, except that the first `times` statements containing `query` fail (a D1 outage). */
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
const upstreamWritesFail = () => failing("INSERT INTO upstream_payments");

/**
 * payPartner's own error handling fails (its log line throws) after the wallet signed and before
 * the authorization was recorded: nothing anywhere says what was handed over.
 */
function payPartnersErrorHandlingFails() {
  const real = console.error.bind(console);
  vi.spyOn(console, "error").mockImplementation((...args: unknown[]) => {
    if (String(args[0]).includes('"error":"paying the partner:'))
      throw new Error("simulated bug logging the error");
    real(...args);
  });
}
const TX = `0x${"5c".repeat(32)}`;

async function chargedFailure(res: Response) {
  expect(res.status).toBe(502);
  const body = await res.json<{ charged: boolean; refund: { status: string; amount_usd: number } }>();
  expect(body.charged).toBe(true);
  return { body, requestId: res.headers.get("x-request-id") ?? "" };
}

describe("an error of ours after the caller paid, before any authorization was signed", () => {
  it("keeps nothing back: the caller gets the whole price, and no share waits on an authorization that does not exist", async () => {
    // The partner's deadline restarting once the caller's settlement is back throws: a bug after
    // the caller paid and before the operating wallet signed anything. Its second restart: the
    // first follows the wait for the wallet's balance, before the caller is charged.
    const real = AbortSignal.timeout.bind(AbortSignal);
    let restarts = 0;
    vi.spyOn(AbortSignal, "timeout").mockImplementation((ms) => {
      if (new Error().stack?.includes("pausedFor") && ++restarts === 2)
        throw new Error("simulated bug after the settlement");
      return real(ms);
    });
    const { partnerCalls, settled } = stubNetwork(x402Partner("20000", () => Response.json({ eth: 1 })));
    const { body, requestId } = await chargedFailure(await paidCall(PATH));
    expect(body.refund).toMatchObject({ status: "refunded", amount_usd: 0.06 });
    expect(partnerCalls.some((p) => p.req.headers.get("payment-signature"))).toBe(false);
    expect(await upstreamRows(requestId)).toEqual([]);
    const first = await refundRow(requestId);
    expect(first).toMatchObject({ amount_micro: 60000, withheld_micro: 0, status: "refunded", hold: null });
    expect(refundsTo(settled, first?.payer)).toEqual([60000]);
    expect(await refundRow(`${requestId}:withheld`)).toBeNull();
  });
});

describe("an error of ours after the operating wallet signed for less than the listed share", () => {
  it("thrown before the authorization was recorded: it is recorded, only its 0.01 is kept, and returned once it expires unused", async () => {
    const { settled } = stubNetwork(
      x402Partner("10000", () =>
        answerWhoseHeaderThrows(Response.json({ eth: 1 }, { status: 500 }), "payment-response"),
      ),
    );
    const { body, requestId } = await chargedFailure(await paidCall(PATH));
    expect(body.refund).toMatchObject({ status: "refunded", amount_usd: 0.05 });
    expect(await upstreamRows(requestId)).toEqual([
      expect.objectContaining({ amount_micro: 10000, chain_status: null }),
    ]);
    const first = await refundRow(requestId);
    expect(first).toMatchObject({ amount_micro: 50000, withheld_micro: 10000 });

    await reconcileUntilDecided(await expiredUnused(requestId), requestId);
    expect(await refundRow(`${requestId}:withheld`)).toMatchObject({
      amount_micro: 10000,
      status: "refunded",
    });
    // The whole price came back, in two refunds.
    expect(refundsTo(settled, first?.payer)).toEqual([50000, 10000]);
  });

  it("thrown after it was recorded: only the 0.01 it can move is kept, and the whole price comes back once it expires", async () => {
    const { settled } = stubNetwork(
      x402Partner("10000", () => answerWhoseHeaderThrows(Response.json({ eth: 1 }), "content-type", true)),
    );
    const { body, requestId } = await chargedFailure(await paidCall(PATH));
    expect(body.refund).toMatchObject({ status: "refunded", amount_usd: 0.05 });
    expect(await upstreamRows(requestId)).toEqual([expect.objectContaining({ amount_micro: 10000 })]);
    const first = await refundRow(requestId);
    expect(first).toMatchObject({ amount_micro: 50000, withheld_micro: 10000 });

    await reconcileUntilDecided(await expiredUnused(requestId), requestId);
    expect(sum(refundsTo(settled, first?.payer))).toBe(60000);
    const report = await payoutsReport();
    expect(report.withheld_not_returned.filter((w) => w.request_id === requestId)).toEqual([]);
  });
});

describe("an error of ours reading the paid answer", () => {
  it("after the authorization's first record write failed: the retry records it, only the 0.01 signed is kept, and no person is asked", async () => {
    stubNetwork(
      x402Partner("10000", () =>
        answerWhoseHeaderThrows(
          Response.json({ eth: 1 }, { headers: receipt("10000") }),
          "content-type",
          true,
        ),
      ),
    );
    const res = await paidCall(PATH, {}, { ...tryEnv, DB: failing("INSERT INTO upstream_payments", 1) });
    const { body, requestId } = await chargedFailure(res);
    expect(body.refund).toMatchObject({ status: "refunded", amount_usd: 0.05 });
    // The record's retry runs after the answer (here before it: app.fetch has no ExecutionContext).
    expect(await upstreamRows(requestId)).toEqual([
      expect.objectContaining({ amount_micro: 10000, tx_hash: PARTNER_TX, upstream_status: 200 }),
    ]);
    expect(await refundRow(requestId)).toMatchObject({ amount_micro: 50000, withheld_micro: 10000 });
    // Listed with the refund before the answer (a Worker cut off before its retry ends would
    // otherwise leave the 0.01 neither returned nor listed), and taken back once the retry wrote
    // the record: reconciliation returns it as for any recorded authorization.
    expect(await refundRow(`${requestId}:withheld`)).toBeNull();
  });
});

describe("an authorization whose record fails on every attempt", () => {
  it("an error of ours reading the answer: only the 0.01 signed is kept, and listed for a person (held, never sent)", async () => {
    const { settled } = stubNetwork(
      x402Partner("10000", () => answerWhoseHeaderThrows(Response.json({ eth: 1 }), "content-type", true)),
    );
    const res = await paidCall(PATH, {}, { ...tryEnv, DB: upstreamWritesFail() });
    const { body, requestId } = await chargedFailure(res);
    expect(body.refund).toMatchObject({ status: "refunded", amount_usd: 0.05 });
    expect(await upstreamRows(requestId)).toEqual([]);
    const { first, kept } = await keptInDoubt(requestId, 50000, 10000);
    expect(String(kept?.hold)).toMatch(
      /^kept back in doubt: .*record could not be written on the answer's path/,
    );
    const report = await payoutsReport();
    expect(report.refunds.find((r) => r.request_id === `${requestId}:withheld`)).toMatchObject({
      amount_micro: 10000,
      status: "owed",
    });
    // Reconciliation never sends a held return.
    await reconcile(tryEnv as never, await expiredUnused(requestId));
    expect(refundsTo(settled, first?.payer)).toEqual([50000]);
  });

  it("an error of ours before the record, in payPartner: the 0.01 kept is listed", async () => {
    stubNetwork(
      x402Partner("10000", () =>
        answerWhoseHeaderThrows(Response.json({ eth: 1 }, { status: 500 }), "payment-response"),
      ),
    );
    const { requestId } = await chargedFailure(
      await paidCall(PATH, {}, { ...tryEnv, DB: upstreamWritesFail() }),
    );
    expect(await upstreamRows(requestId)).toEqual([]);
    expect(await refundRow(requestId)).toMatchObject({ amount_micro: 50000, withheld_micro: 10000 });
    expect(await refundRow(`${requestId}:withheld`)).toMatchObject({
      amount_micro: 10000,
      status: "owed",
      hold: expect.stringMatching(/^kept back in doubt:/),
    });
  });

  it("the partner took it and answered 500: the 0.01 kept is listed", async () => {
    stubNetwork(x402Partner("10000", () => Response.json({ error: "down" }, { status: 500 })));
    const res = await paidCall(PATH, {}, { ...tryEnv, DB: upstreamWritesFail() });
    expect(res.status).toBe(502);
    const requestId = res.headers.get("x-request-id") ?? "";
    expect(await res.json()).toMatchObject({ charged: true, refund: { amount_usd: 0.05 } });
    expect(await upstreamRows(requestId)).toEqual([]);
    expect(await refundRow(`${requestId}:withheld`)).toMatchObject({
      amount_micro: 10000,
      status: "owed",
      hold: expect.stringMatching(/^kept back in doubt:/),
    });
  });
});

describe("an error of ours when nothing says whether an authorization was handed over", () => {
  it("keeps the listed share back and lists it for a person: less a transfer that landed, if one did", async () => {
    payPartnersErrorHandlingFails();
    const { settled } = stubNetwork(
      x402Partner("10000", () => answerWhoseHeaderThrows(Response.json({ eth: 1 }), "payment-response")),
    );
    const { body, requestId } = await chargedFailure(await paidCall(PATH));
    expect(body.refund).toMatchObject({ status: "refunded", amount_usd: 0.04 });
    expect(await upstreamRows(requestId)).toEqual([]);
    const { first, kept } = await keptInDoubt(requestId, 40000, 20000);
    // The wallet may have signed less than the listed share: what did not land is still the caller's.
    expect(String(kept?.hold)).toMatch(/may have been handed over/);
    expect(String(kept?.hold)).toMatch(/minus the landed transfer's amount/);
    expect(String(kept?.hold)).not.toMatch(/nothing is owed/);

    await reconcile(tryEnv as never, await expiredUnused(requestId));
    expect(refundsTo(settled, first?.payer)).toEqual([40000]);
  });

  it("the authorization's row turns up after all and expires unused: the return is rewritten for a person, never sent, so it is paid once", async () => {
    payPartnersErrorHandlingFails();
    const { settled } = stubNetwork(
      x402Partner("10000", () => answerWhoseHeaderThrows(Response.json({ eth: 1 }), "payment-response")),
    );
    const { requestId } = await chargedFailure(await paidCall(PATH));
    const payer = (await refundRow(requestId))?.payer;
    // Its record had been written after all (the read that found none was wrong), for less than listed.
    await env.DB.prepare(
      `INSERT INTO upstream_payments (request_id, partner_id, service_id, amount_micro, upstream_status, created_at,
         payer, pay_to, asset, network, auth_nonce, valid_before)
       VALUES (?1, 'pricefeed', 'price_coin', 10000, 200, ?2, ?3, ?4, ?5, ?6, ?7, ?8)`,
    )
      .bind(
        requestId,
        Date.now(),
        `0x${"0a".repeat(20)}`,
        "0x1111111111111111111111111111111111111111",
        env.USDC_ADDRESS,
        env.X402_NETWORK,
        `0x${crypto.randomUUID().replaceAll("-", "").repeat(2)}`,
        Math.floor(Date.now() / 1000) - 600,
      )
      .run();
    // A person, told to, checks the chain and refunds it by hand, while reconciliation decides the
    // row expired unused: it writes down the decision and never sends the return.
    await reconcileUntilDecided(await expiredUnused(requestId), requestId);
    expect(refundsTo(settled, payer)).toEqual([40000]);
    const kept = await refundRow(`${requestId}:withheld`);
    expect(kept).toMatchObject({ amount_micro: 20000, status: "owed", valid_before: null });
    expect(String(kept?.hold)).toMatch(
      /^kept back in doubt: decided since \(.*expired unused.*\): refund this by hand/,
    );
    expect(refundsTo(settled, payer)).toEqual([40000]);
    expect(
      await resolveRefundByHand(tryEnv, `${requestId}:withheld`, TX, 20000, "paid by hand"),
    ).toMatchObject({
      status: "recorded",
      row: { status: "refunded", amount_micro: 20000, owed_micro: 20000 },
    });
    await reconcile(tryEnv as never, await expiredUnused(requestId));
    expect(refundsTo(settled, payer)).toEqual([40000]);
  });
});

describe("a kept share larger than the authorization it waited for", () => {
  it("the request's only authorization expired unused: all of it goes back, not just that authorization's amount", async () => {
    const requestId = crypto.randomUUID();
    const payer = "0x5555555555555555555555555555555555555555";
    await env.DB.batch([
      env.DB.prepare(
        `INSERT INTO upstream_payments (request_id, partner_id, service_id, amount_micro, upstream_status, created_at,
           asset, network)
         VALUES (?1, 'pricefeed', 'price_coin', 10000, 0, ?2, ?3, ?4)`,
      ).bind(requestId, Date.now(), env.USDC_ADDRESS, env.X402_NETWORK),
      env.DB.prepare(
        `INSERT INTO refunds (request_id, payer, amount_micro, withheld_micro, reason, status, created_at, updated_at)
         VALUES (?1, ?2, 40000, 20000, 'the partner call failed after your payment settled', 'refunded', ?3, ?3)`,
      ).bind(requestId, payer, Date.now()),
    ]);
    const [row] = await upstreamRows(requestId);
    const returned = await applyUpstream(env.DB, row as unknown as UpstreamRow, {
      outcome: "unpaid",
      evidence: "expired unused",
    });
    expect(returned).toMatchObject({ requestId: `${requestId}:withheld`, paidMicros: 20000n, payer });
  });

  it("decided before returns existed and refunded by hand: recorded for all that was kept, as the return would have been", async () => {
    const requestId = crypto.randomUUID();
    await env.DB.batch([
      env.DB.prepare(
        `INSERT INTO upstream_payments (request_id, partner_id, service_id, amount_micro, upstream_status, created_at,
           asset, network, chain_status)
         VALUES (?1, 'pricefeed', 'price_coin', 10000, 0, ?2, ?3, ?4, 'not_landed')`,
      ).bind(requestId, Date.now(), env.USDC_ADDRESS, env.X402_NETWORK),
      env.DB.prepare(
        `INSERT INTO refunds (request_id, payer, amount_micro, withheld_micro, reason, status, created_at, updated_at)
         VALUES (?1, '0x5555555555555555555555555555555555555555', 40000, 20000, 'x', 'refunded', ?2, ?2)`,
      ).bind(requestId, Date.now()),
    ]);
    expect(
      await resolveRefundByHand(tryEnv, `${requestId}:withheld`, `0x${"6d".repeat(32)}`, 20000, undefined),
    ).toMatchObject({
      status: "recorded",
      row: { status: "refunded", amount_micro: 20000, owed_micro: 20000 },
    });
  });

  it("decided before returns existed, another authorization still undecided: the hand return stops at this one's amount", async () => {
    const requestId = crypto.randomUUID();
    const upstream = (status: string | null, nonce: string) =>
      env.DB.prepare(
        `INSERT INTO upstream_payments (request_id, partner_id, service_id, amount_micro, upstream_status, created_at,
           asset, network, auth_nonce, chain_status)
         VALUES (?1, 'pricefeed', 'price_coin', 10000, 0, ?2, ?3, ?4, ?5, ?6)`,
      ).bind(requestId, Date.now(), env.USDC_ADDRESS, env.X402_NETWORK, nonce, status);
    await env.DB.batch([
      upstream("not_landed", `0x${"03".repeat(32)}`),
      upstream(null, `0x${"04".repeat(32)}`),
      env.DB.prepare(
        `INSERT INTO refunds (request_id, payer, amount_micro, withheld_micro, reason, status, created_at, updated_at)
         VALUES (?1, '0x5555555555555555555555555555555555555555', 40000, 20000, 'x', 'refunded', ?2, ?2)`,
      ).bind(requestId, Date.now()),
    ]);
    expect(
      await resolveRefundByHand(tryEnv, `${requestId}:withheld`, `0x${"7e".repeat(32)}`, 10000, undefined),
    ).toMatchObject({
      status: "recorded",
      row: { amount_micro: 10000, owed_micro: 10000 },
    });
  });

  it("another authorization of the request may still land: only this one's amount goes back", async () => {
    const requestId = crypto.randomUUID();
    const upstream = (amount: number, nonce: string) =>
      env.DB.prepare(
        `INSERT INTO upstream_payments (request_id, partner_id, service_id, amount_micro, upstream_status, created_at,
           asset, network, auth_nonce)
         VALUES (?1, 'pricefeed', 'price_coin', ?2, 0, ?3, ?4, ?5, ?6)`,
      ).bind(requestId, amount, Date.now(), env.USDC_ADDRESS, env.X402_NETWORK, nonce);
    await env.DB.batch([
      upstream(10000, `0x${"01".repeat(32)}`),
      upstream(10000, `0x${"02".repeat(32)}`),
      env.DB.prepare(
        `INSERT INTO refunds (request_id, payer, amount_micro, withheld_micro, reason, status, created_at, updated_at)
         VALUES (?1, '0x5555555555555555555555555555555555555555', 40000, 20000, 'x', 'refunded', ?2, ?2)`,
      ).bind(requestId, Date.now()),
    ]);
    const [row] = await upstreamRows(requestId);
    const returned = await applyUpstream(env.DB, row as unknown as UpstreamRow, {
      outcome: "unpaid",
      evidence: "expired unused",
    });
    expect(returned).toMatchObject({ paidMicros: 10000n });
  });
});

// A Worker cut off after the answer (a client gone while the refund is sent, waitUntil's end) must
// not lose a share kept back for an authorization whose record failed on the answer's path.
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
    // Both in D1 now: the listing made only for the missing record is taken back.
    expect(await refundRow(`${requestId}:withheld`)).toBeNull();
  });

  it("the refund's own batch failing once and retried after the answer does not bring the listing back", async () => {
    stubNetwork(x402Partner("10000", () => Response.json({ error: "down" }, { status: 500 })));
    const fails = new Map([
      ["INSERT INTO upstream_payments", 1],
      ["INSERT INTO refunds", 1],
    ]);
    const db = new Proxy(env.DB, {
      get(target, key) {
        if (key === "prepare")
          return (sql: string) => {
            for (const [query, left] of fails)
              if (sql.includes(query) && left > 0) {
                fails.set(query, left - 1);
                throw new Error("D1_ERROR: simulated outage");
              }
            return target.prepare(sql);
          };
        const value = Reflect.get(target, key);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const registered: Promise<unknown>[] = [];
    const res = await paidCallWithCtx({ ...tryEnv, DB: db }, collectingCtx(registered));
    expect(res.status).toBe(502);
    await Promise.all(registered);
    const requestId = res.headers.get("x-request-id") ?? "";
    expect(await upstreamRows(requestId)).toEqual([expect.objectContaining({ amount_micro: 10000 })]);
    expect(await refundRow(requestId)).toMatchObject({ withheld_micro: 10000 });
    expect(await refundRow(`${requestId}:withheld`)).toBeNull();
  });

  it("the same when the error is ours, reading the partner's answer: the retry is handed over before the refund is sent", async () => {
    stubNetwork(
      x402Partner("10000", () =>
        answerWhoseHeaderThrows(
          Response.json({ eth: 1 }, { headers: receipt("10000") }),
          "content-type",
          true,
        ),
      ),
    );
    const { release, refundReached } = hangRefundSettles();
    const registered: Promise<unknown>[] = [];
    const e = { ...tryEnv, DB: failing("INSERT INTO upstream_payments", 1) };
    const answering = paidCallWithCtx(e, collectingCtx(registered));
    await refundReached;
    expect(registered.length).toBeGreaterThan(0);
    release();
    expect((await answering).status).toBe(502);
    await Promise.all(registered);
    const requestId = String(
      (
        await env.DB.prepare(
          "SELECT request_id FROM refunds WHERE request_id NOT LIKE '%:withheld' ORDER BY id DESC LIMIT 1",
        ).first<{ request_id: string }>()
      )?.request_id,
    );
    expect(await upstreamRows(requestId)).toEqual([expect.objectContaining({ amount_micro: 10000 })]);
    expect(await refundRow(`${requestId}:withheld`)).toBeNull();
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
