import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { faultEnv } from "../fixtures/storage-faults";
import { paidCall, payoutRows, receipt, stubNetwork, tryEnv, x402Partner } from "./network";

afterEach(() => {
  vi.restoreAllMocks();
});

// The partner try's claim (settlement.ts guardAuthorization, as a skill's) D1 committed and then
// answered with an error: the call is this request's, so it runs and is charged and paid once.
describe("try: a claim committed before D1's error", () => {
  it("runs the call, settles the caller once and pays the partner once", async () => {
    const net = stubNetwork(
      x402Partner("10000", () => Response.json({ prices: { btc: 1 } }, { headers: receipt("10000") })),
    );
    const { env: faulty } = faultEnv(tryEnv, {
      db: { n: 1, mode: "after", match: /INSERT INTO payment_nonces/ },
    });
    const res = await paidCall("/api/partners/pricefeed/try/price", {}, faulty);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ charged: true, paid_upstream: true });
    const id = res.headers.get("x-request-id");
    // The caller settled once, and the partner was sent one paid request.
    expect(net.settled).toHaveLength(1);
    expect(net.partnerCalls.filter((c) => c.req.headers.get("payment-signature"))).toHaveLength(1);
    const claim = await env.DB.prepare("SELECT status FROM payment_nonces WHERE request_id = ?1")
      .bind(id)
      .first<{ status: string }>();
    expect(claim?.status).toBe("settled");
    expect(await payoutRows(id)).toHaveLength(1);
  });
});
