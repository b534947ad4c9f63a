import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { paidCall, receipt, stubNetwork, tryEnv, x402Partner } from "./network";

afterEach(() => {
  vi.restoreAllMocks();
});

const claimOf = (requestId: string) =>
  env.DB.prepare("SELECT status, payout FROM payment_nonces WHERE request_id = ?1")
    .bind(requestId)
    .first<{ status: string; payout: string | null }>();

/** A 502 settlement_unconfirmed answer, and the request id it names. */
async function unconfirmed(res: Response) {
  expect(res.status).toBe(502);
  const body = await res.json<{ reason: string; request_id: string }>();
  expect(body.reason).toBe("settlement_unconfirmed");
  return body.request_id;
}

const refineryCall = () =>
  paidCall("/api/skills/refinery-recipes", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      raw: "Tenants must pay by the 1st.",
      request: "obligations",
      recipe: "policy_digest",
    }),
  });
const policyDigestShare = {
  partnerId: "refinery",
  serviceId: "policy_digest",
  shareMicros: "30000",
  feeMicros: "60000",
};

describe("a partner call whose settlement gets no answer keeps what it owes the partner with its claim", () => {
  it("a refinery recipe that was served keeps that recipe's share (3x: the partner's 0.03, our 0.06)", async () => {
    const { partnerCalls } = stubNetwork(() => Response.json({ digest: ["obligation"] }), {
      settles: "no answer",
    });
    const res = await refineryCall();
    const requestId = await unconfirmed(res);
    expect(partnerCalls).toHaveLength(1);
    const claim = await claimOf(requestId);
    expect(claim?.status).toBe("failed");
    expect(JSON.parse(claim?.payout ?? "null")).toEqual(policyDigestShare);
  });

  it("a partner that asks to be paid first is owed nothing when the caller's own settlement got no answer", async () => {
    const { partnerCalls } = stubNetwork(
      x402Partner("10000", () => Response.json({ prices: { btc: 1 } }, { headers: receipt("10000") })),
      { settles: "no answer" },
    );
    const requestId = await unconfirmed(await paidCall("/api/partners/pricefeed/try/price"));
    // The caller is settled before we pay the partner: with no answer, the partner saw only the
    // unpaid request and served nothing.
    expect(partnerCalls.map((p) => p.req.headers.get("payment-signature"))).toEqual([null]);
    expect(await claimOf(requestId)).toEqual({ status: "failed", payout: "none" });
  });

  it("a skill of our own owes no partner anything", async () => {
    stubNetwork(() => Response.json({}), { settles: "no answer" });
    const requestId = await unconfirmed(
      await paidCall(
        "/api/skills/slugify",
        {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ text: "Hello" }),
        },
        { ...tryEnv, FREE_BETA: "false" },
      ),
    );
    expect(await claimOf(requestId)).toEqual({ status: "failed", payout: "none" });
  });
});

describe("a served partner call whose ledger write keeps failing keeps the partner's share with its claim", () => {
  it("the refinery call answers 200, its claim stays 'running' with the share, for reconciliation", async () => {
    stubNetwork(() => Response.json({ digest: ["obligation"] }));
    await env.DB.prepare(
      "CREATE TRIGGER IF NOT EXISTS refinery_ledger_down BEFORE INSERT ON payments WHEN NEW.resource = 'refinery_recipes' BEGIN SELECT RAISE(ABORT, 'ledger unavailable'); END",
    ).run();
    try {
      // No execution context: the retries (and the write that keeps the share) run before the answer.
      const res = await refineryCall();
      expect(res.status).toBe(200);
      const requestId = res.headers.get("x-request-id") ?? "";
      expect(await claimOf(requestId)).toEqual({
        status: "running",
        payout: JSON.stringify(policyDigestShare),
      });
    } finally {
      await env.DB.prepare("DROP TRIGGER IF EXISTS refinery_ledger_down").run();
    }
  });
});

describe("a partner call whose settlement the facilitator answered with its own error (500 unexpected_settle_error)", () => {
  // It may have broadcast the transfer before failing: unconfirmed, never "you were not charged"
  // with the claim dropped (reconciliation reads only claims, so a landed payment was lost).
  it("a partner that asks to be paid first: 502 unconfirmed, the claim kept, the partner never paid", async () => {
    const { partnerCalls } = stubNetwork(
      x402Partner("10000", () => Response.json({ prices: { btc: 1 } }, { headers: receipt("10000") })),
      { settles: "facilitator error" },
    );
    const res = await paidCall("/api/partners/pricefeed/try/price");
    expect(res.headers.get("retry-after")).toBe("10");
    const requestId = await unconfirmed(res);
    expect(partnerCalls.map((p) => p.req.headers.get("payment-signature"))).toEqual([null]);
    expect(await claimOf(requestId)).toEqual({ status: "failed", payout: "none" });
  });

  it("a refinery recipe that was served keeps its share with the claim", async () => {
    const { partnerCalls } = stubNetwork(() => Response.json({ digest: ["obligation"] }), {
      settles: "facilitator error",
    });
    const requestId = await unconfirmed(await refineryCall());
    expect(partnerCalls).toHaveLength(1);
    const claim = await claimOf(requestId);
    expect(claim?.status).toBe("failed");
    expect(JSON.parse(claim?.payout ?? "null")).toEqual(policyDigestShare);
  });
});
