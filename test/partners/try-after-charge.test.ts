import { afterEach, describe, expect, it, vi } from "vitest";
import { paidCall, receipt, stubNetwork, x402Partner } from "./network";

afterEach(() => {
  vi.restoreAllMocks();
});

/** The partner's 10 s deadline, 50 times shorter (200 ms), so a test outlasts it in a moment. */
function shortPartnerDeadline() {
  const real = AbortSignal.timeout.bind(AbortSignal);
  vi.spyOn(AbortSignal, "timeout").mockImplementation((ms) => real(ms <= 10_000 ? Math.ceil(ms / 50) : ms));
}

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
      { settleDelayMs: 300 },
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
      settleDelayMs: 300,
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
