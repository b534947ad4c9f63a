import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import {
  PAYMENT_META,
  PAYMENT_RESPONSE_META,
  RECEIPT_META,
  V1_PAYMENT_META,
  V1_PAYMENT_RESPONSE_META,
} from "../../src/mcp/limits";
import { mcpInit } from "../helpers";

afterEach(() => vi.restoreAllMocks());

/** Every discovery document and page, and what in it names a partner route or price. */
const DOCUMENTS = [
  "/",
  "/docs",
  "/api/catalog",
  "/.well-known/x402",
  "/.well-known/agents.json",
  "/openapi.json",
  "/llms.txt",
  "/AGENTS.md",
  "/services/sha256.json",
];
// AGENTS.md names partners only in its spend cap, sized for the dearest partner price.
const PARTNER_ROUTE =
  /\/api\/partners\/|\/api\/skills\/refinery-recipes|services\/refinery-recipes|setSpendControls/;

// The wording that describes partners beside their routes: the free-beta line and the MCP summary.
const PARTNER_WORDING = /still paid|partner service|<partner>__<service>/;

async function get(bindings: object, path: string) {
  return createApp().fetch(new Request(`https://skills.test${path}`), bindings);
}

/** The instructions MCP initialize answers with. */
async function instructionsOf(bindings: object) {
  const init = mcpInit("initialize", {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: "t", version: "1" },
  });
  const res = await createApp().fetch(new Request("https://skills.test/mcp", init), bindings);
  return (await res.json<{ result: { instructions: string } }>()).result.instructions;
}

// The texts as they were before partners could be left out: with partners listed they stay so.
const MCP_SUMMARY_LISTED = `MCP server (Streamable HTTP, stateless, JSON responses): every skill and paid partner service is a tool (skill id, or <partner>__<service>). tools/list and resources are free. A tools/call without payment returns isError with the x402 v2 PaymentRequired as structuredContent; sign it and retry with params._meta["${PAYMENT_META}"]; the result carries _meta["${PAYMENT_RESPONSE_META}"]. An x402 v1 payer (Vercel's x402-mcp) signs the v1 offer in content[1] and sends its X-PAYMENT value in params._meta["x402.payment"]; the result carries _meta["x402.payment-response"]. Skills can also be paid from card credits: connect with Authorization: Bearer mk_... (partner services and refinery recipes take x402 only); a key pays only its own skill's calls, and any other call on that connection is paid with x402 (unpaid, it returns the offer). A call is charged only for a result, except a partner that must be paid before it answers: your payment settles first, and if the partner then fails the result says charged: true with a refund.`;
const INSTRUCTIONS_LISTED = `Free beta: skill tools answer without payment for now; partner services and refinery recipes are still paid. Every tool is one paid skill or partner service; tools/list and resources are free. Pay a call with x402 v2: call without payment, take the PaymentRequired from the error result, sign it and retry with params._meta["${PAYMENT_META}"] (a call you stop waiting for still runs and is charged if it succeeds: to get its result back, put a payment-identifier id in the extensions of the payment and resend with a fresh signature and the same id); the settlement comes back in _meta["${PAYMENT_RESPONSE_META}"] (x402 v1 payers such as x402-mcp: sign a requirement of the error result's second text item and send the X-PAYMENT header value in params._meta["${V1_PAYMENT_META}"]; the settlement comes back in _meta["${V1_PAYMENT_RESPONSE_META}"] too; a v1 call cannot be fetched again, as payment-identifier is v2 only and an Idempotency-Key works with a card key only: if its answer is lost it is still charged, and the same v1 authorization sent again is refused, as payment_authorization_reused or, by the facilitator, invalid_exact_evm_transaction_simulation_failed), and every paid result carries its signed receipt in _meta["${RECEIPT_META}"]. Or connect with the header Authorization: Bearer mk_... to pay skills with card credits: a key pays its own skill's calls, and every other call on that connection is paid with x402 as above (partner services and refinery recipes take x402 only). An error result with reason settlement_unconfirmed carries the offer too, but your payment may still land: it is then refunded (less the share owed to a partner that served the call); check its transaction before you pay again. You are charged only for a successful result, except by a partner that must be paid before it answers: your payment settles first, and if the partner then fails the result says charged: true with a refund (the price less what the partner can still collect).`;
const htmlEscaped = (text: string) =>
  text.replaceAll("<", "&lt;").replaceAll(">", "&gt;").replaceAll('"', "&quot;").replaceAll("'", "&#39;");
const DOCS_MCP_LISTED = [
  "the refinery skill, and one per paid partner service (<code>&lt;partner&gt;__&lt;service&gt;</code>). Resources: ",
  "send it on every request (partner services and refinery recipes take x402 only). A key buys",
  "are not settled. The one exception is a partner that must be paid before it answers: your payment settles first, and if the partner then fails the result says <code>charged: true</code> with a <code>refund</code> (the price less what the partner can still collect, sent back to the payer). A signature pays one call",
];

// Each case builds every discovery document afresh for its own configuration (nothing cached):
// seconds of work that a loaded machine stretched past the default 30 s once.
describe("a refused partner configuration leaves the partners out of every discovery document", {
  timeout: 90_000,
}, () => {
  it.each([
    ["a multiplier below 3", { PARTNER_PRICE_MULTIPLIER: "2" }, "PARTNER_PRICE_MULTIPLIER"],
    ["PARTNER_BASE_URLS that is not JSON", { PARTNER_BASE_URLS: "{not json" }, "PARTNER_BASE_URLS"],
    ["PARTNERS_ENABLED false", { PARTNERS_ENABLED: "false" }, "PARTNERS_ENABLED"],
  ])(
    "%s: every document answers 200 without a partner route; the partner routes 503",
    async (_what, vars, named) => {
      vi.spyOn(console, "error").mockImplementation(() => {});
      vi.spyOn(console, "log").mockImplementation(() => {});
      const bad = { ...env, ...vars };
      for (const path of DOCUMENTS) {
        const res = await get(bad, path);
        expect(res.status, path).toBe(200);
        expect(await res.text(), path).not.toMatch(PARTNER_ROUTE);
      }
      for (const path of ["/llms.txt", "/AGENTS.md", "/.well-known/agents.json"]) {
        expect(await (await get(bad, path)).text(), path).not.toMatch(PARTNER_WORDING);
      }
      const page = await get(bad, "/docs/mcp");
      expect(page.status).toBe(200);
      expect(await page.text()).not.toMatch(/partner|refinery/i);
      expect(await instructionsOf(bad)).not.toMatch(/partner|refinery/i);
      expect((await get(bad, "/services/refinery-recipes.json")).status).toBe(404);
      for (const path of ["/api/partners", "/api/partners/pricefeed"]) {
        const res = await get(bad, path);
        expect(res.status, path).toBe(503);
        expect((await res.json<{ detail: string }>()).detail, path).toContain(named);
      }
    },
  );

  it("with a configuration that can be read, the same documents name the partner routes", async () => {
    for (const path of DOCUMENTS.filter(
      (p) => !["/docs", "/api/catalog", "/.well-known/agents.json", "/services/sha256.json"].includes(p),
    )) {
      const res = await get(env, path);
      expect(res.status, path).toBe(200);
      expect(await res.text(), path).toMatch(PARTNER_ROUTE);
    }
    expect((await get(env, "/services/refinery-recipes.json")).status).toBe(200);
  });

  it("with partners listed, the texts that describe them are word for word what they were", async () => {
    const freeBeta =
      "Free beta: skill calls are free for now (they answer without a 402 or any payment); partner services and refinery recipes are still paid.";
    const llms = await (await get(env, "/llms.txt")).text();
    expect(llms).toContain(`\n${freeBeta}\n`);
    expect(llms).toContain(`: ${MCP_SUMMARY_LISTED} Setup: `);
    const agents = await (await get(env, "/AGENTS.md")).text();
    expect(agents).toContain(
      "\n**Free beta**: skill calls are free for now (they answer without a `402` or any payment); partner services and refinery recipes are still paid.\n",
    );
    expect(agents).toContain(`\n${MCP_SUMMARY_LISTED}\n`);
    const manifest = await (await get(env, "/.well-known/agents.json")).json<{
      mcp: { description: string };
    }>();
    expect(manifest.mcp.description).toBe(MCP_SUMMARY_LISTED);
    const page = (await (await get(env, "/docs/mcp")).text()).replace(/\s+/g, " ");
    for (const text of [`<p>${htmlEscaped(MCP_SUMMARY_LISTED)}</p>`, ...DOCS_MCP_LISTED]) {
      expect(page).toContain(text);
    }
    expect(await instructionsOf(env)).toBe(INSTRUCTIONS_LISTED);
  });
});
