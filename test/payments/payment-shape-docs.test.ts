import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { FIXTURE } from "../fixtures/upstream-requests";

// Where the documents spell out a v2 PaymentPayload they name its `resource`: a payment built from
// the shape they gave (x402Version, accepted and payload) was refused resource_mismatch, "made for
// no resource".
const paidEnv = { ...env, FREE_BETA: "false", FACILITATOR_URL: `${FIXTURE}/facilitator` };
const app = createApp();

const textOf = (html: string) =>
  html
    .replaceAll("&quot;", '"')
    .replaceAll("&lt;", "<")
    .replaceAll("&gt;", ">")
    .replaceAll("&#39;", "'")
    .replaceAll("&amp;", "&");

describe("the PaymentPayload shape the documents give names its resource", () => {
  it("/docs/mcp: the paid tools/call example's _meta payment has x402Version, resource, accepted and payload", async () => {
    const res = await app.fetch(new Request("https://skills.test/docs/mcp"), paidEnv);
    const blocks = [...(await res.text()).matchAll(/<code>([^<]*)<\/code>/g)].map((m) => textOf(m[1] ?? ""));
    const example = blocks.find((b) => b.includes('"x402/payment"'));
    expect(example).toBeDefined();
    const payment = JSON.parse(example as string).params._meta["x402/payment"];
    expect(Object.keys(payment)).toEqual(["x402Version", "resource", "accepted", "payload"]);
  });

  it("a PAYMENT-SIGNATURE that is no payment is told the fields a payment carries, resource among them", async () => {
    const res = await app.fetch(
      new Request("https://skills.test/api/skills/sha256", {
        method: "POST",
        headers: { "payment-signature": btoa(JSON.stringify({ hello: "world" })) },
        body: JSON.stringify({ text: "abc" }),
      }),
      paidEnv,
    );
    expect(res.status).toBe(402);
    const body = await res.json<{ reason: string; error: string }>();
    expect(body.reason).toBe("invalid_payment_header");
    expect(body.error).toMatch(/x402Version, resource \(the PaymentRequired's\), accepted and payload/);
  });
});
