import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import { afterAll, afterEach, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { callsLeft, keyWith } from "../fixtures/credits";
import { unsignedPayment } from "../fixtures/payments";
import { faultEnv } from "../fixtures/storage-faults";
import { FIXTURE, upstreamRequests } from "../fixtures/upstream-requests";
import { cardEnv } from "../payments/checkout-helpers";

// Workers Analytics Engine's writeDataPoint throws once a limit is passed (its runtime checks each
// write: 250 data points per invocation). The call statistics are written
// after the answer was made, and paid for: a sink that refuses one must leave the answer, the
// payment and the D1 call-log row as they are.
const app = createApp();
/** A sink that takes `takes` data points, then refuses every one. */
const refusingAfter = (takes: number) => {
  let written = 0;
  return {
    writeDataPoint() {
      if (++written > takes) throw new Error("analytics engine limit reached");
    },
  };
};

afterEach(() => {
  vi.restoreAllMocks();
});

// The refusal is logged at most once a minute per isolate, so whichever test runs first (files and
// tests may run shuffled) writes the line: it is checked for the file, not per test.
const errorLines: string[] = [];
const watchErrors = () =>
  vi.spyOn(console, "error").mockImplementation((line) => {
    errorLines.push(String(line));
  });
afterAll(() => {
  expect(errorLines.some((l) => l.includes("call statistics data point not written"))).toBe(true);
});

async function send(path: string, init: RequestInit, bindings: object) {
  const ctx = createExecutionContext();
  const res = await app.fetch(new Request(`https://skills.test${path}`, init), bindings, ctx);
  const body = await res.text();
  await waitOnExecutionContext(ctx);
  return { res, body };
}

it("a card-paid call whose statistics sink throws keeps its 200, spends one credit and is logged in D1", async () => {
  watchErrors();
  const key = await keyWith(env.DB, 5, "uuid_mint", { total: 10 });
  const f = faultEnv({ ...cardEnv, CALL_STATS: refusingAfter(0) }, {});
  const { res, body } = await send(
    "/api/skills/uuid-mint",
    { method: "POST", headers: { authorization: `Bearer ${key}` }, body: JSON.stringify({ count: 1 }) },
    f.env,
  );
  expect(res.status).toBe(200);
  expect(JSON.parse(body)).toMatchObject({ skill: "uuid_mint", ok: true });
  expect(res.headers.get("x-credits-remaining")).toBe("4");
  expect(await callsLeft(env.DB, key)).toBe(4);
  // The D1 twin of the statistics still gets the call (CALL_LOG_FLUSH_MS is 0 in the tests).
  expect(f.log.db.some((line) => line.includes("INSERT INTO call_log"))).toBe(true);
});

it("an x402-paid call whose statistics sink throws keeps its settled 200 and its PAYMENT-RESPONSE", async () => {
  watchErrors();
  const paidEnv = {
    ...env,
    FREE_BETA: "false",
    FACILITATOR_URL: `${FIXTURE}/facilitator`,
    // The unpaid 402 is written; the paid call's point is refused, after its settlement.
    CALL_STATS: refusingAfter(1),
  };
  const path = "/api/skills/sha256";
  const unpaid = await send(path, { method: "POST", body: "{}" }, paidEnv);
  expect(unpaid.res.status).toBe(402);
  const required = decodePaymentRequiredHeader(unpaid.res.headers.get("payment-required") as string);
  const from = `0x${crypto.getRandomValues(new Uint8Array(20)).reduce((s, b) => s + b.toString(16).padStart(2, "0"), "")}`;
  const { payload, nonce } = unsignedPayment(required, from);
  const { res, body } = await send(
    path,
    {
      method: "POST",
      body: JSON.stringify({ text: "abc" }),
      headers: { "payment-signature": encodePaymentSignatureHeader(payload) },
    },
    paidEnv,
  );
  expect(res.status).toBe(200);
  expect(JSON.parse(body)).toMatchObject({ skill: "sha256", ok: true });
  expect(res.headers.get("payment-response")).toBeTruthy();
  expect(await upstreamRequests(`facilitator-settle nonce=${nonce}`)).toBe(1);
});
