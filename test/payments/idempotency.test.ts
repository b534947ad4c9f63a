import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentPayload, PaymentRequired, PaymentRequirements } from "@x402/core/types";
import { appendPaymentIdentifierToExtensions, generatePaymentId } from "@x402/extensions/payment-identifier";
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { transferWithAuthorization } from "../../src/payments/transfer-authorization";
import { callsLeft, keyWith as newKey } from "../fixtures/credits";
import { authorizationFor } from "../fixtures/payments";
import { FIXTURE, upstreamRequests } from "../fixtures/upstream-requests";

// Idempotent paid retries (src/payments/idempotency.ts) against the facilitator double
// (test/fixtures/facilitator-double.mjs), which settles for any ordinary payer and counts each
// settle call by nonce. The same on the real chain with @x402/fetch: test/e2e/receipts.test.ts.
const paidEnv = { ...env, FREE_BETA: "false", FACILITATOR_URL: `${FIXTURE}/facilitator` };
const app = createApp();
// Real keys: a replay hands out a paid answer only to a payment whose EIP-712 signature recovers to
// its payer (idempotency.ts), so these payers sign for real; the double settles any of them.
const accounts = new Map<string, PrivateKeyAccount>();
const newPayer = () => {
  const account = privateKeyToAccount(generatePrivateKey());
  accounts.set(account.address, account);
  return account.address;
};

function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  return app.fetch(
    new Request(`https://skills.test${path}`, {
      method: "POST",
      headers,
      body: typeof body === "string" ? body : JSON.stringify(body),
    }),
    paidEnv,
  );
}

async function required(path: string): Promise<PaymentRequired> {
  const res = await post(path, {});
  expect(res.status).toBe(402);
  return decodePaymentRequiredHeader(res.headers.get("payment-required") as string);
}

/** A fresh authorization (new nonce) that carries `paymentId`, built as a v2 client builds it. */
async function signed(path: string, from: string, paymentId?: string) {
  const req = await required(path);
  const accepted = req.accepts[0] as PaymentRequirements;
  const extensions = structuredClone(req.extensions ?? {}) as Record<string, unknown>;
  if (paymentId) appendPaymentIdentifierToExtensions(extensions, paymentId);
  const authorization = authorizationFor(accepted, from);
  const { nonce } = authorization;
  const account = accounts.get(from);
  const signature = account
    ? await account.signTypedData(
        transferWithAuthorization(authorization, {
          name: "USD Coin",
          version: "2",
          chainId: Number(accepted.network.split(":")[1]),
          verifyingContract: accepted.asset as `0x${string}`,
        }),
      )
    : `0x${"11".repeat(65)}`;
  const payload: PaymentPayload = {
    x402Version: 2,
    accepted,
    resource: req.resource,
    extensions,
    payload: { signature, authorization },
  };
  return {
    header: encodePaymentSignatureHeader(payload),
    nonce,
    key: `${accepted.network}:${accepted.asset}:${from}:${nonce}`.toLowerCase(),
  };
}

const settles = async (...nonces: string[]) => {
  let n = 0;
  for (const nonce of nonces) n += await upstreamRequests(`facilitator-settle nonce=${nonce}`);
  return n;
};
const nonceRow = (key: string) =>
  env.DB.prepare("SELECT status FROM payment_nonces WHERE nonce = ?1").bind(key).first<{ status: string }>();
const ledgerRowsOf = (payer: string) =>
  env.DB.prepare("SELECT count(*) AS n FROM payments WHERE payer = ?1").bind(payer).first<{ n: number }>();

// Paid calls build the x402 middleware and talk to the double: generous on a busy machine.
describe("idempotent x402 retries (payment-identifier extension)", { timeout: 30_000 }, () => {
  it("the 402 advertises the payment-identifier extension as optional", async () => {
    const req = await required("/api/skills/sha256");
    expect(req.extensions?.["payment-identifier"]).toMatchObject({ info: { required: false } });
  });

  it("a stored answer goes only to a payment signed by its payer: writing the payer's address in `from` is not enough", async () => {
    const payer = newPayer();
    const id = generatePaymentId();
    const first = await signed("/api/skills/uuid-mint", payer, id);
    const paid = await post("/api/skills/uuid-mint", { count: 2 }, { "payment-signature": first.header });
    expect(paid.status).toBe(200);
    // Same id, same body, `from` = the payer, but a signature nobody made: no replay.
    accounts.delete(payer);
    const forged = await signed("/api/skills/uuid-mint", payer, id);
    const res = await post("/api/skills/uuid-mint", { count: 2 }, { "payment-signature": forged.header });
    expect(res.headers.get("x-idempotent-replay")).toBeNull();
    expect(await res.text()).not.toBe(await paid.clone().text());
  });

  describe("a contract wallet's signature (not recoverable to its `from`): its stored answer only once the chain confirms it", () => {
    // The real-chain case (Circle's ERC-1271 mock wallet paying and retrying): test/e2e/contract-wallet.test.ts.
    // Here a JSON-RPC double answers each method as the test says, to reach every outcome.
    const RPC = "https://rpc.test/";
    afterEach(() => {
      vi.restoreAllMocks();
    });
    function rpcAnswers(eth_call: () => Response | object) {
      const realFetch = globalThis.fetch;
      vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
        const req = new Request(input, init);
        if (req.url !== RPC) return realFetch(input, init);
        const { id, method } = await req.json<{ id: number; method: string }>();
        const ok = (result: unknown) => Response.json({ jsonrpc: "2.0", id, result });
        if (method === "eth_chainId") return ok(`0x${Number(env.X402_NETWORK.split(":")[1]).toString(16)}`);
        if (method === "eth_getCode") return ok("0x6080604052");
        if (method !== "eth_call")
          return Response.json({ jsonrpc: "2.0", id, error: { code: -32601, message: "no" } });
        const answer = eth_call();
        return answer instanceof Response ? answer : Response.json({ jsonrpc: "2.0", id, ...answer });
      });
    }
    /** A paid call from a "contract wallet" with `id`, then a retry with a fresh signature. */
    async function payThenRetry(rpcUrl = RPC) {
      const withRpc = { ...paidEnv, RPC_URL: rpcUrl };
      const send = (header: string) =>
        app.fetch(
          new Request("https://skills.test/api/skills/uuid-mint", {
            method: "POST",
            headers: { "payment-signature": header },
            body: JSON.stringify({ count: 2 }),
          }),
          withRpc,
        );
      const wallet = newPayer();
      accounts.delete(wallet); // its signatures are not an EOA's: nothing recovers to it here
      const id = generatePaymentId();
      const first = await signed("/api/skills/uuid-mint", wallet, id);
      const paid = await send(first.header);
      expect(paid.status).toBe(200); // the facilitator judged and settled it
      const retry = await signed("/api/skills/uuid-mint", wallet, id);
      const res = await send(retry.header);
      return { res, paid, nonces: [first.nonce, retry.nonce] as const, retryKey: retry.key };
    }

    it("the wallet answers ERC-1271's magic value: the retry gets the stored answer, nothing more settled", async () => {
      rpcAnswers(() => ({ result: `0x1626ba7e${"0".repeat(56)}` }));
      const { res, paid, nonces } = await payThenRetry();
      expect(res.status).toBe(200);
      expect(res.headers.get("x-idempotent-replay")).toBe("true");
      expect(await res.text()).toBe(await paid.text());
      expect(await settles(...nonces)).toBe(1);
    });

    it("the wallet reverts: 409 payment_signature_unproven, nothing settled", async () => {
      rpcAnswers(() => ({ error: { code: 3, message: "execution reverted", data: "0x" } }));
      const { res, nonces, retryKey } = await payThenRetry();
      expect(res.status).toBe(409);
      expect(await res.json()).toMatchObject({ reason: "payment_signature_unproven" });
      expect(await settles(...nonces)).toBe(1);
      expect(await nonceRow(retryKey)).toBeNull();
    });

    it.each([
      ["answers HTTP 500 to the eth_call", () => new Response("upstream error", { status: 500 })],
      ["rate limits the eth_call", () => ({ error: { code: -32005, message: "limit exceeded" } })],
    ])(
      "the RPC %s: 503 payer_check_unavailable with Retry-After (never told to pay again), nothing settled",
      async (_n, answer) => {
        const logged = vi.spyOn(console, "error").mockImplementation(() => {});
        rpcAnswers(answer);
        const { res, nonces } = await payThenRetry();
        expect(res.status).toBe(503);
        expect(res.headers.get("retry-after")).toBe("2");
        expect(await res.json()).toMatchObject({ reason: "payer_check_unavailable" });
        expect(await settles(...nonces)).toBe(1);
        expect(logged.mock.calls.flat().join(" ")).toContain("payer check on chain");
      },
    );

    it.each([
      ["with no scheme", "rpc.test/v2/secret-key-123"],
      ["of wss://", "wss://rpc.test/v2/secret-key-123"],
    ])(
      "an RPC_URL %s is not handed to viem: 503 payer_check_unavailable, a warn line naming RPC_URL (not its value)",
      async (_n, rpcUrl) => {
        const warned = vi.spyOn(console, "warn").mockImplementation(() => {});
        const errors = vi.spyOn(console, "error").mockImplementation(() => {});
        const fetched = vi.spyOn(globalThis, "fetch");
        const { res, nonces } = await payThenRetry(rpcUrl);
        expect(res.status).toBe(503);
        expect(res.headers.get("retry-after")).toBe("2");
        expect(await res.json()).toMatchObject({ reason: "payer_check_unavailable" });
        expect(await settles(...nonces)).toBe(1);
        // Nothing asked of the RPC (viem's transport fetches the URL it is given).
        const asked = fetched.mock.calls.map(([input]) =>
          input instanceof Request ? input.url : String(input),
        );
        expect(asked.filter((url) => url.includes("rpc.test"))).toEqual([]);
        const lines = warned.mock.calls.map((args) => args.join(" "));
        const line = lines.find((l) => l.includes("payer check on chain not made"));
        expect(JSON.parse(line as string)).toMatchObject({
          level: "warn",
          reason: "RPC_URL is not an absolute http(s) URL (its value is not shown)",
        });
        const logged = [...lines, ...errors.mock.calls.map((args) => args.join(" "))].join(" ");
        expect(logged).not.toContain("secret-key-123");
      },
    );
  });

  it("an answer lost after settlement: the retry with a fresh signature gets the same bytes, nothing more is settled", async () => {
    const payer = newPayer();
    const id = generatePaymentId();
    const first = await signed("/api/skills/uuid-mint", payer, id);
    const lost = await post("/api/skills/uuid-mint", { count: 3 }, { "payment-signature": first.header });
    expect(lost.status).toBe(200);
    const lostBody = await lost.arrayBuffer(); // kept only to compare: the client never saw it
    const lostHeaders = lost.headers;
    expect(lostHeaders.get("x-payment-receipt")).toBeTruthy();
    expect(await settles(first.nonce)).toBe(1);

    const retry = await signed("/api/skills/uuid-mint", payer, id);
    const res = await post("/api/skills/uuid-mint", { count: 3 }, { "payment-signature": retry.header });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-idempotent-replay")).toBe("true");
    // uuid-mint answers fresh random ids each run: equal bytes prove the handler did not run again.
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(new Uint8Array(lostBody));
    for (const h of ["payment-response", "x-payment-receipt", "content-type"]) {
      expect(res.headers.get(h)).toBe(lostHeaders.get(h));
    }
    expect(res.headers.get("x-original-request-id")).toBe(lostHeaders.get("x-request-id"));
    // One settlement, one ledger row; the fresh authorization was neither settled nor claimed.
    expect(await settles(first.nonce, retry.nonce)).toBe(1);
    expect(await ledgerRowsOf(payer)).toEqual({ n: 1 });
    expect(await nonceRow(retry.key)).toBeNull();
    expect(await nonceRow(first.key)).toEqual({ status: "settled" });
  });

  it("a body that differs only in key order and spacing is the same request", async () => {
    const payer = newPayer();
    const id = generatePaymentId();
    const a = await signed("/api/skills/slugify", payer, id);
    const one = await post("/api/skills/slugify", '{"text":"Hello World","max_len":20}', {
      "payment-signature": a.header,
    });
    expect(one.status).toBe(200);
    const b = await signed("/api/skills/slugify", payer, id);
    const two = await post("/api/skills/slugify", '{ "max_len": 20,\n "text": "Hello World" }', {
      "payment-signature": b.header,
    });
    expect(two.status).toBe(200);
    expect(two.headers.get("x-idempotent-replay")).toBe("true");
    expect(await settles(a.nonce, b.nonce)).toBe(1);
  });

  it("the same id with another body, path or payer is a 409 that says why, and settles nothing", async () => {
    const payer = newPayer();
    const id = generatePaymentId();
    const first = await signed("/api/skills/sha256", payer, id);
    expect(
      (await post("/api/skills/sha256", { text: "abc" }, { "payment-signature": first.header })).status,
    ).toBe(200);

    const otherBody = await signed("/api/skills/sha256", payer, id);
    const r1 = await post("/api/skills/sha256", { text: "abd" }, { "payment-signature": otherBody.header });
    expect(r1.status).toBe(409);
    const b1 = await r1.json<{ reason: string; detail: string }>();
    expect(b1.reason).toBe("idempotency_key_mismatch");
    expect(b1.detail).toMatch(/POST \/api\/skills\/sha256 with a different body/);

    const otherPath = await signed("/api/skills/slugify", payer, id);
    const r2 = await post("/api/skills/slugify", { text: "abc" }, { "payment-signature": otherPath.header });
    expect(r2.status).toBe(409);
    expect((await r2.json<{ detail: string }>()).detail).toMatch(
      /already used for POST \/api\/skills\/sha256/,
    );

    const otherPayer = await signed("/api/skills/sha256", newPayer(), id);
    const r3 = await post("/api/skills/sha256", { text: "abc" }, { "payment-signature": otherPayer.header });
    expect(r3.status).toBe(409);
    expect((await r3.json<{ detail: string }>()).detail).toMatch(/another payer/);

    expect(await settles(first.nonce, otherBody.nonce, otherPath.nonce, otherPayer.nonce)).toBe(1);
    for (const s of [otherBody, otherPath, otherPayer]) expect(await nonceRow(s.key)).toBeNull();
  });

  it("10 concurrent calls with one id: one runs and settles, the others wait (409 Retry-After) or get its answer", async () => {
    const payer = newPayer();
    const id = generatePaymentId();
    const sigs = await Promise.all(
      Array.from({ length: 10 }, () => signed("/api/skills/uuid-mint", payer, id)),
    );
    const all = await Promise.all(
      sigs.map((s) => post("/api/skills/uuid-mint", { count: 2 }, { "payment-signature": s.header })),
    );
    const ok = all.filter((r) => r.status === 200);
    const waiting = all.filter((r) => r.status === 409);
    expect(ok.length + waiting.length).toBe(10);
    expect(ok.filter((r) => r.headers.get("x-idempotent-replay") !== "true")).toHaveLength(1);
    for (const r of waiting) {
      expect(r.headers.get("retry-after")).toBe("2");
      expect((await r.json<{ reason: string }>()).reason).toBe("idempotent_request_in_flight");
    }
    expect(await settles(...sigs.map((s) => s.nonce))).toBe(1);
    expect(await ledgerRowsOf(payer)).toEqual({ n: 1 });
    // Once it finished, every waiting client gets the one answer on retry.
    const bodies = new Set(await Promise.all(ok.map((r) => r.text())));
    const late = await signed("/api/skills/uuid-mint", payer, id);
    const again = await post("/api/skills/uuid-mint", { count: 2 }, { "payment-signature": late.header });
    expect(again.headers.get("x-idempotent-replay")).toBe("true");
    bodies.add(await again.text());
    expect(bodies.size).toBe(1);
    expect(await settles(late.nonce)).toBe(0);
  });

  it("an id whose call failed is free again: the retry runs and pays normally", async () => {
    const payer = newPayer();
    const id = generatePaymentId();
    const bad = await signed("/api/skills/sha256", payer, id);
    expect((await post("/api/skills/sha256", { text: 5 }, { "payment-signature": bad.header })).status).toBe(
      422,
    );
    const good = await signed("/api/skills/sha256", payer, id);
    const res = await post("/api/skills/sha256", { text: 5 }, { "payment-signature": good.header });
    expect(res.status).toBe(422);
    expect(res.headers.get("x-idempotent-replay")).toBeNull();
    const fixed = await signed("/api/skills/sha256", payer, id);
    const ok = await post("/api/skills/sha256", { text: "abc" }, { "payment-signature": fixed.header });
    expect(ok.status).toBe(200);
    expect(await settles(bad.nonce, good.nonce, fixed.nonce)).toBe(1);
  });

  it("a malformed payment identifier is a 422 before any payment work", async () => {
    const sig = await signed("/api/skills/sha256", newPayer());
    const payload = JSON.parse(atob(sig.header)) as PaymentPayload;
    payload.extensions = { "payment-identifier": { info: { required: false, id: "short!" } } };
    const res = await post(
      "/api/skills/sha256",
      { text: "abc" },
      { "payment-signature": encodePaymentSignatureHeader(payload) },
    );
    expect(res.status).toBe(422);
    const { detail } = await res.json<{ detail: { loc: string[]; type: string }[] }>();
    expect(detail[0]?.loc).toEqual([
      "header",
      "payment-signature",
      "extensions",
      "payment-identifier",
      "info",
      "id",
    ]);
    expect(await settles(sig.nonce)).toBe(0);
  });

  it("stored answers expire after the 24 h window: the id then runs (and pays) anew", async () => {
    const payer = newPayer();
    const id = generatePaymentId();
    const a = await signed("/api/skills/sha256", payer, id);
    expect(
      (await post("/api/skills/sha256", { text: "abc" }, { "payment-signature": a.header })).status,
    ).toBe(200);
    await env.DB.prepare("UPDATE idempotent_results SET created_at = created_at - 86400001 WHERE key = ?1")
      .bind(`x402:${id}`)
      .run();
    const b = await signed("/api/skills/sha256", payer, id);
    const res = await post("/api/skills/sha256", { text: "abc" }, { "payment-signature": b.header });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-idempotent-replay")).toBeNull();
    expect(await settles(a.nonce, b.nonce)).toBe(2);
  });
});

describe("idempotent card-credit calls (Idempotency-Key)", { timeout: 30_000 }, () => {
  const cardEnv = { ...paidEnv, X402_ENABLED: "false" };
  const keyWith = (calls: number, skill = "uuid_mint") => newKey(env.DB, calls, skill);
  const call = (key: string, idem: string | undefined, body: unknown = { count: 2 }) =>
    app.fetch(
      new Request("https://skills.test/api/skills/uuid-mint", {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, ...(idem ? { "idempotency-key": idem } : {}) },
        body: JSON.stringify(body),
      }),
      cardEnv,
    );
  const left = (key: string) => callsLeft(env.DB, key);

  it("a retry with the same Idempotency-Key returns the stored answer and spends no second credit", async () => {
    const key = await keyWith(3);
    const first = await call(key, "order-42");
    expect(first.status).toBe(200);
    const body = await first.text();
    expect(await left(key)).toBe(2);
    const retry = await call(key, "order-42");
    expect(retry.status).toBe(200);
    expect(retry.headers.get("x-idempotent-replay")).toBe("true");
    expect(await retry.text()).toBe(body);
    expect(await left(key)).toBe(2);
    // Another key is another customer: the same Idempotency-Key string is theirs to use.
    const other = await keyWith(1);
    const theirs = await call(other, "order-42");
    expect(theirs.status).toBe(200);
    expect(theirs.headers.get("x-idempotent-replay")).toBeNull();
    // The key sent as X-API-Key is the same customer and the same stored answer.
    const viaApiKey = await app.fetch(
      new Request("https://skills.test/api/skills/uuid-mint", {
        method: "POST",
        headers: { "x-api-key": key, "idempotency-key": "order-42" },
        body: JSON.stringify({ count: 2 }),
      }),
      cardEnv,
    );
    expect(viaApiKey.headers.get("x-idempotent-replay")).toBe("true");
    expect(await viaApiKey.text()).toBe(body);
    expect(await left(key)).toBe(2);
    // Without the header every call spends.
    expect((await call(key, undefined)).status).toBe(200);
    expect(await left(key)).toBe(1);
  });

  it("an answer store that fails never turns the paid answer into a 500; the key holds until the write is retried", async () => {
    const key = await keyWith(3);
    await env.DB.prepare(
      "CREATE TRIGGER IF NOT EXISTS store_down BEFORE UPDATE ON idempotent_results WHEN NEW.status = 'done' BEGIN SELECT RAISE(ABORT, 'store unavailable'); END",
    ).run();
    const ctx = createExecutionContext();
    try {
      const first = await app.fetch(
        new Request("https://skills.test/api/skills/uuid-mint", {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "idempotency-key": "store-down" },
          body: JSON.stringify({ count: 2 }),
        }),
        cardEnv,
        ctx,
      );
      expect(first.status).toBe(200);
      const body = await first.text();
      expect(JSON.parse(body).ids).toHaveLength(2);
      expect(await left(key)).toBe(2);
      // The retry cannot run (and pay) again while the answer is not stored.
      const early = await call(key, "store-down");
      expect(early.status).toBe(409);
      expect(await left(key)).toBe(2);
      await env.DB.prepare("DROP TRIGGER IF EXISTS store_down").run();
      await waitOnExecutionContext(ctx);
      const later = await call(key, "store-down");
      expect(later.headers.get("x-idempotent-replay")).toBe("true");
      expect(await later.text()).toBe(body);
      expect(await left(key)).toBe(2);
    } finally {
      await env.DB.prepare("DROP TRIGGER IF EXISTS store_down").run();
    }
  });

  it("bodies that differ only in a digit of an integer past 2^53 are different requests", async () => {
    // json_sort answers such integers exactly, so a replay of the other body's answer would be wrong.
    const key = await keyWith(3, "json_sort");
    const send = (id: string) =>
      app.fetch(
        new Request("https://skills.test/api/skills/json-sort", {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "idempotency-key": "big-ints" },
          body: `{"data":{"id":${id}}}`,
        }),
        cardEnv,
      );
    const first = await send("12345678901234567890");
    expect(await first.text()).toContain('"canonical":"{\\"id\\":12345678901234567890}"');
    const other = await send("12345678901234567891");
    expect(other.status).toBe(409);
    expect(await left(key)).toBe(2);
  });

  it("a body sending the object {rawJSON: digits} is not the body with that integer (either order), and its own retry is replayed", async () => {
    // The canonical form writes an integer past 2^53 as {"rawJSON":"<digits>"}: without telling the
    // two apart, the second body got the first's stored answer.
    const key = await keyWith(6, "json_sort");
    const send = (idem: string, body: string) =>
      app.fetch(
        new Request("https://skills.test/api/skills/json-sort", {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "idempotency-key": idem },
          body,
        }),
        cardEnv,
      );
    const big = '{"data":{"a":12345678901234567890}}';
    const literal = '{"data":{"a":{"rawJSON":"12345678901234567890"}}}';
    // The key's letters escaped are the same key.
    const escaped = '{"data":{"a":{"\\u0072awJSON":"12345678901234567890"}}}';
    expect((await send("raw-1", big)).status).toBe(200);
    const second = await send("raw-1", literal);
    expect(second.status).toBe(409);
    expect(second.headers.get("x-idempotent-replay")).toBeNull();
    expect((await send("raw-1", escaped)).status).toBe(409);
    const first = await send("raw-2", literal);
    expect(first.status).toBe(200);
    const answer = await first.text();
    expect(answer).toContain('\\"rawJSON\\"');
    expect((await send("raw-2", big)).status).toBe(409);
    const retry = await send("raw-2", literal);
    expect(retry.headers.get("x-idempotent-replay")).toBe("true");
    expect(await retry.text()).toBe(answer);
    expect(await left(key)).toBe(4);
    // An object keyed rawJSON that no integer can be (another key beside it, or no digits) keeps
    // the canonical fingerprint: its retry with the keys in another order is the same request.
    for (const [idem, body, reordered] of [
      ["raw-3", '{"data":{"a":{"rawJSON":"1","b":2}}}', '{"data":{"a":{"b":2,"rawJSON":"1"}}}'],
      ["raw-4", '{"data":{"a":{"rawJSON":"x"},"b":1}}', '{"data":{"b":1,"a":{"rawJSON":"x"}}}'],
    ] as const) {
      expect((await send(idem, body)).status).toBe(200);
      expect((await send(idem, reordered)).headers.get("x-idempotent-replay")).toBe("true");
    }
    expect(await left(key)).toBe(2);
  });

  it("bodies whose strings differ only in a lone surrogate or U+FFFD are different requests", async () => {
    // UTF-8 writes every lone surrogate as U+FFFD: hashed so, these three bodies were one request.
    const key = await keyWith(3, "json_sort");
    const send = (value: string) =>
      app.fetch(
        new Request("https://skills.test/api/skills/json-sort", {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "idempotency-key": "lone-1" },
          body: `{"data":{"a":"${value}"}}`,
        }),
        cardEnv,
      );
    expect((await send("\\ud800")).status).toBe(200);
    for (const other of ["\\udfff", "\\ufffd", "\\\\ud800"]) {
      const res = await send(other);
      expect(res.status, other).toBe(409);
      expect(res.headers.get("x-idempotent-replay")).toBeNull();
    }
    expect((await send("\\uD800")).headers.get("x-idempotent-replay")).toBe("true");
    expect(await left(key)).toBe(2);
  });

  it("the same Idempotency-Key with another body is a 409 and spends nothing", async () => {
    const key = await keyWith(3);
    expect((await call(key, "k-1")).status).toBe(200);
    const res = await call(key, "k-1", { count: 5 });
    expect(res.status).toBe(409);
    expect((await res.json<{ reason: string }>()).reason).toBe("idempotency_key_mismatch");
    expect(await left(key)).toBe(2);
  });

  it("an Idempotency-Key that is not visible ASCII is a 422", async () => {
    const key = await keyWith(1);
    const res = await call(key, "x".repeat(256));
    expect(res.status).toBe(422);
    // Header names in loc are lower case (FastAPI's), the same on every route.
    expect((await res.json<{ detail: { loc: string[] }[] }>()).detail[0]?.loc).toEqual([
      "header",
      "idempotency-key",
    ]);
    expect(await left(key)).toBe(1);
  });
});
