import { afterEach, describe, expect, it, vi } from "vitest";
import { paidCall, stubNetwork, upstreamRows, x402Partner } from "./network";

// The operating wallet signs validBefore = now + the partner's maxTimeoutSeconds (@x402/evm), and
// the partner can collect that authorization until then: a caller's withheld share waits as long.
// So a partner's 402 asking for a longer window than 300 s is refused like any other term we do
// not sign, before the caller is charged.

afterEach(() => {
  vi.restoreAllMocks();
});

const TEN_YEARS = 315_360_000;
const dropped = () => {
  throw new TypeError("Network connection lost.");
};
const served = () => Response.json({ coin: "eth", usd: 3400.25 });
const signatures = (calls: { req: Request }[]) => calls.map((c) => c.req.headers.get("payment-signature"));

describe("try: the operating wallet signs a partner's authorization for at most 300 s", () => {
  it.each<[string, unknown]>([
    ["ten years (then the connection drops)", TEN_YEARS],
    ["301 s", 301],
    ["0 s", 0],
    ["a negative window", -1],
    ["a fraction of a second past 299", 299.5],
    ["no window at all", undefined],
  ])(
    "a 402 asking for %s: 502 before the caller is charged, nothing signed, nothing recorded",
    async (_name, maxTimeoutSeconds) => {
      const { partnerCalls, settled } = stubNetwork(
        x402Partner("20000", dropped, { maxTimeoutSeconds } as { maxTimeoutSeconds: number }),
      );
      const res = await paidCall("/api/partners/pricefeed/try/price_coin?coin=eth");
      expect(res.status).toBe(502);
      const body = await res.json<{ detail: string }>();
      expect(body).toMatchObject({ charged: false, upstream_status: 402, partner_id: "pricefeed" });
      expect(body.detail).toMatch(new RegExp(`maxTimeoutSeconds ${String(maxTimeoutSeconds)} `));
      expect(body).not.toHaveProperty("refund");
      expect(res.headers.get("payment-response")).toBeNull();
      // The caller's payment was never settled, and the partner never got an authorization.
      expect(settled).toHaveLength(0);
      expect(signatures(partnerCalls)).toEqual([null]);
      expect(await upstreamRows(res.headers.get("x-request-id"))).toEqual([]);
    },
  );

  it.each([300, 60])(
    "a 402 asking for %i s is paid, and the authorization expires within it",
    async (window) => {
      const { partnerCalls } = stubNetwork(x402Partner("20000", served, { maxTimeoutSeconds: window }));
      const before = Math.floor(Date.now() / 1000);
      const res = await paidCall("/api/partners/pricefeed/try/price_coin?coin=eth");
      expect(res.status).toBe(200);
      expect(signatures(partnerCalls).filter(Boolean)).toHaveLength(1);
      const [row] = await upstreamRows(res.headers.get("x-request-id"));
      expect(Number(row?.valid_before)).toBeGreaterThanOrEqual(before + window);
      expect(Number(row?.valid_before)).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + window);
    },
  );
});
