import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { recordUpstreamPayment } from "../../src/partners/payouts";
import { paidCall, payoutRows, receipt, stubNetwork, tryEnv, upstreamRows, x402Partner } from "./network";

afterEach(() => {
  vi.restoreAllMocks();
});

/**
 * The partner's 10 s deadline, 10 times shorter (1 s), so a test outlasts it in a moment; not
 * shorter: paying the partner (signing, its verification) took over 200 ms on a loaded machine.
 */
function shortPartnerDeadline() {
  const real = AbortSignal.timeout.bind(AbortSignal);
  vi.spyOn(AbortSignal, "timeout").mockImplementation((ms) => real(ms <= 10_000 ? Math.ceil(ms / 10) : ms));
}
/** A settlement slower than that shortened deadline. */
const SLOW_SETTLE_MS = 1_500;

/** A partner request that never answers: it ends only when its deadline aborts it. */
const stalls = (req: Request) =>
  new Promise<Response>((_resolve, reject) => {
    if (req.signal.aborted) reject(req.signal.reason);
    req.signal.addEventListener("abort", () => reject(req.signal.reason));
  });

describe("try: the caller's own settlement does not count against the partner's deadline", () => {
  it("a settlement slower than the partner's deadline, a partner that answers at once: 200, paid", async () => {
    shortPartnerDeadline();
    const { partnerCalls, settled } = stubNetwork(
      x402Partner("10000", () => Response.json({ prices: { btc: 1 } }, { headers: receipt("10000") })),
      { settleDelayMs: SLOW_SETTLE_MS },
    );
    const res = await paidCall("/api/partners/pricefeed/try/price");
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ charged: true, paid_upstream: true, upstream_status: 200 });
    expect(settled).toHaveLength(1);
    expect(partnerCalls.at(-1)?.req.headers.get("payment-signature")).toBeTruthy();
  });

  it("after the settlement the partner's own time still counts: a paid request that stalls is a 504, refunded", async () => {
    shortPartnerDeadline();
    const partner = x402Partner("10000", () => Response.json({}));
    stubNetwork((req) => (req.headers.get("payment-signature") ? stalls(req) : partner(req)), {
      settleDelayMs: SLOW_SETTLE_MS,
    });
    const res = await paidCall("/api/partners/pricefeed/try/price");
    expect(res.status).toBe(504);
    // The partner holds our authorization (0.01): the caller gets back the rest of its 0.03.
    expect(await res.json()).toMatchObject({
      charged: true,
      refund: { status: "refunded", amount_usd: 0.02 },
    });
  });
});

/**
 * The test database, except that preparing a statement containing `sql` throws, the first `times`
 * times (Infinity: always), as a D1 outage would.
 */
function failingDb(sql: string, times: number) {
  let left = times;
  return new Proxy(env.DB, {
    get(target, key) {
      if (key === "prepare")
        return (query: string) => {
          if (query.includes(sql) && left-- > 0) throw new Error("D1_ERROR: simulated outage");
          return target.prepare(query);
        };
      const value = Reflect.get(target, key);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
const refundRow = (requestId: string | null) =>
  env.DB.prepare("SELECT status, amount_micro, withheld_micro FROM refunds WHERE request_id = ?1")
    .bind(requestId)
    .first();

describe("try: once the caller is charged, no failure of ours is a 500", () => {
  it("the upstream payment's write fails once: the partner's answer is kept (200) and the row written after it", async () => {
    stubNetwork(x402Partner("20000", () => Response.json({ eth: 1 }, { headers: receipt("20000") })));
    const db = failingDb("INSERT INTO upstream_payments", 1);
    const res = await paidCall("/api/partners/pricefeed/try/price_coin?coin=eth", {}, { ...tryEnv, DB: db });
    expect(res.status).toBe(200);
    expect(res.headers.get("payment-response")).toBeTruthy();
    expect(await res.json()).toMatchObject({ charged: true, paid_upstream: true, body: { eth: 1 } });
    const id = res.headers.get("x-request-id");
    expect(await upstreamRows(id)).toEqual([
      expect.objectContaining({ amount_micro: 20000, upstream_status: 200 }),
    ]);
    expect(await payoutRows(id)).toEqual([expect.objectContaining({ paid_upstream: 1 })]);
  });

  it("the upstream payment's write keeps failing: still the partner's 200, never a 500", async () => {
    stubNetwork(x402Partner("20000", () => Response.json({ eth: 1 }, { headers: receipt("20000") })));
    const db = failingDb("INSERT INTO upstream_payments", Number.POSITIVE_INFINITY);
    const res = await paidCall("/api/partners/pricefeed/try/price_coin?coin=eth", {}, { ...tryEnv, DB: db });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ charged: true, paid_upstream: true });
  });

  it("the partner fails in transit and the write fails once: 502 refunded less what the partner holds; the row written after", async () => {
    stubNetwork(
      x402Partner("20000", () => {
        throw new TypeError("Network connection lost.");
      }),
    );
    const db = failingDb("INSERT INTO upstream_payments", 1);
    const res = await paidCall("/api/partners/pricefeed/try/price_coin?coin=eth", {}, { ...tryEnv, DB: db });
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({
      charged: true,
      refund: { status: "refunded", amount_usd: 0.04 },
    });
    expect(await upstreamRows(res.headers.get("x-request-id"))).toEqual([
      expect.objectContaining({ amount_micro: 20000, upstream_status: 0 }),
    ]);
  });

  it("the refund's write fails once: 502 with the refund owed, recorded and sent after the answer", async () => {
    const { settled } = stubNetwork(
      x402Partner("20000", () =>
        Response.json({ error: "boom" }, { status: 500, headers: receipt("20000") }),
      ),
    );
    const db = failingDb("INSERT INTO refunds", 1);
    const res = await paidCall("/api/partners/pricefeed/try/price_coin?coin=eth", {}, { ...tryEnv, DB: db });
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({
      charged: true,
      upstream_status: 500,
      refund: { status: "owed", amount_usd: 0.04, transaction: null },
    });
    expect(await refundRow(res.headers.get("x-request-id"))).toEqual({
      status: "refunded",
      amount_micro: 40000,
      withheld_micro: 20000,
    });
    expect(settled).toHaveLength(2);
  });

  it("the refund's write keeps failing: still a 502 that says the refund is owed, never a 500", async () => {
    stubNetwork(
      x402Partner("20000", () =>
        Response.json({ error: "boom" }, { status: 500, headers: receipt("20000") }),
      ),
    );
    const db = failingDb("INSERT INTO refunds", Number.POSITIVE_INFINITY);
    const res = await paidCall("/api/partners/pricefeed/try/price_coin?coin=eth", {}, { ...tryEnv, DB: db });
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({ charged: true, refund: { status: "owed", amount_usd: 0.04 } });
  });
});

describe("an upstream payment is recorded once per request and authorization", () => {
  it("a retried write whose first attempt committed adds no second row", async () => {
    const requestId = crypto.randomUUID();
    const write = () =>
      recordUpstreamPayment(env.DB, {
        requestId,
        partnerId: "pricefeed",
        serviceId: "price",
        amountMicros: 10000n,
        transaction: null,
        upstreamStatus: 200,
        authorization: {
          payer: `0x${"0a".repeat(20)}`,
          payTo: `0x${"11".repeat(20)}`,
          asset: env.USDC_ADDRESS,
          network: env.X402_NETWORK,
          nonce: `0x${"cd".repeat(32)}`,
          validBefore: Math.floor(Date.now() / 1000) + 300,
        },
      });
    await write();
    await write();
    expect(await upstreamRows(requestId)).toHaveLength(1);
  });
});
