// Benchmark-only: what the receipt and idempotency middlewares add to a paid call, timed inside
// workerd. Each variant is a tiny app around the same settled 1 KB answer, so the difference to
// the bare app is exactly the middleware's work (header decode, body hash, JWS, D1 claim/store).
// The request's ExecutionContext is passed on, so work deferred with waitUntil (expiring old
// idempotency rows) stays off the timed path as in production.
import { encodePaymentResponseHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import { Hono, type MiddlewareHandler } from "hono";
import type { AppEnv } from "../../src/env";
import { idempotent } from "../../src/payments/idempotency";
import { signReceipt } from "../../src/payments/receipts";

const BODY = JSON.stringify({ slug: "x".repeat(1000) });
const SETTLED = encodePaymentResponseHeader({
  success: true,
  transaction: `0x${"ab".repeat(32)}`,
  network: "eip155:8453",
  payer: `0x${"12".repeat(20)}`,
});
const PAYER = `0x${"12".repeat(20)}`;

function appWith(...middlewares: MiddlewareHandler<AppEnv>[]) {
  const app = new Hono<AppEnv>();
  app.use(async (c, next) => {
    c.set("requestId", crypto.randomUUID());
    await next();
  });
  app.use("/x", ...middlewares);
  app.post("/x", (c) =>
    c.body(BODY, 200, { "content-type": "application/json", "payment-response": SETTLED }),
  );
  return app;
}

function paymentHeader(id?: string) {
  return encodePaymentSignatureHeader({
    x402Version: 2,
    accepted: {
      scheme: "exact",
      network: "eip155:8453",
      asset: `0x${"cd".repeat(20)}`,
      amount: "3000",
      payTo: `0x${"ef".repeat(20)}`,
      maxTimeoutSeconds: 300,
      extra: {},
    },
    ...(id ? { extensions: { "payment-identifier": { info: { required: false, id } } } } : {}),
    payload: { signature: "0x", authorization: { from: PAYER, nonce: `0x${"00".repeat(32)}` } },
  });
}

async function perCall(n: number, call: (i: number) => Response | Promise<Response>) {
  for (let i = 0; i < 5; i++) await (await call(-1 - i)).arrayBuffer(); // warm up
  const t = performance.now();
  for (let i = 0; i < n; i++) await (await call(i)).arrayBuffer();
  return (performance.now() - t) / n;
}

/** What the app hands a request (Hono's ExecutionContext, not the runtime's wider type). */
type AppContext = Parameters<Hono["fetch"]>[2];

export async function paidOverhead(env: Env, n: number, ctx: AppContext) {
  const pair = (await crypto.subtle.generateKey({ name: "Ed25519" }, true, [
    "sign",
    "verify",
  ])) as CryptoKeyPair;
  const jwk = await crypto.subtle.exportKey("jwk", pair.privateKey);
  const e = { ...env, FREE_BETA: "false", RECEIPT_SIGNING_KEY: JSON.stringify({ ...jwk, kid: "bench" }) };
  const req = (headers: Record<string, string> = {}) =>
    new Request("https://bench.local/x", { method: "POST", body: BODY, headers });
  const bare = appWith();
  const receipts = appWith(signReceipt("bench"));
  const idem = appWith(idempotent({ cardKeys: false }));
  const run = crypto.randomUUID().replace(/-/g, "");
  const baseline = await perCall(n, () => bare.fetch(req(), e, ctx));
  const signed = await perCall(n, () => receipts.fetch(req(), e, ctx));
  const fresh = await perCall(n, (i) =>
    idem.fetch(req({ "payment-signature": paymentHeader(`bench_${run}_${i}`) }), e, ctx),
  );
  const replayHeader = paymentHeader(`bench_${run}_0`);
  const replay = await perCall(n, () => idem.fetch(req({ "payment-signature": replayHeader }), e, ctx));
  const plain = await perCall(n, () => idem.fetch(req({ "payment-signature": paymentHeader() }), e, ctx));
  return {
    n,
    baseline_ms: baseline,
    receipt_ms: signed - baseline,
    idempotent_fresh_ms: fresh - baseline,
    idempotent_replay_ms: replay,
    no_key_ms: plain - baseline,
  };
}
