import { env } from "cloudflare:test";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import type { PaymentPayload, PaymentRequired, PaymentRequirements } from "@x402/core/types";
import { generatePaymentId } from "@x402/extensions/payment-identifier";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { sha256Hex } from "../../src/digest";
import { claim } from "../../src/payments/idempotent-results";
import { LIMITS } from "../../src/payments/quotas";
import { callsLeft, keyWith } from "../fixtures/credits";
import { authorizationFor, signedPayment } from "../fixtures/payments";
import { freshWindow, installWindowGuard, ONE_MORE_RUN } from "../fixtures/rate-window";
import { FIXTURE } from "../fixtures/upstream-requests";

// What the idempotency step costs a request that can get no stored answer: chain reads (the
// ERC-1271 proof of a contract wallet's signature) and D1 writes (the key's claim). Against the
// facilitator double and a JSON-RPC double that counts what it is asked.
const RPC = "https://rpc.test/";
const paidEnv = { ...env, FREE_BETA: "false", FACILITATOR_URL: `${FIXTURE}/facilitator`, RPC_URL: RPC };
const app = createApp();
const PATH = "/api/skills/uuid-mint";
const randomIp = () => `10.${[0, 0, 0].map(() => Math.floor(Math.random() * 250)).join(".")}`;

const post = (e: object, headers: Record<string, string>, body: unknown = { count: 2 }) =>
  app.fetch(
    new Request(`https://skills.test${PATH}`, { method: "POST", headers, body: JSON.stringify(body) }),
    e,
  );

let offer: PaymentRequired | undefined;
async function required(): Promise<PaymentRequired> {
  if (!offer) {
    const res = await post(paidEnv, {}, {});
    expect(res.status).toBe(402);
    offer = decodePaymentRequiredHeader(res.headers.get("payment-required") as string);
  }
  return offer;
}

/** The payment `id` in `from`'s name with a signature nobody made (not an EOA's of `from`). */
async function junkSigned(from: string, id: string) {
  const req = await required();
  const accepted = req.accepts[0] as PaymentRequirements;
  const extensions = structuredClone(req.extensions ?? {}) as Record<string, unknown>;
  extensions["payment-identifier"] = { info: { required: false, id } };
  const payload: PaymentPayload = {
    x402Version: 2,
    accepted,
    resource: req.resource,
    extensions,
    payload: { signature: `0x${"11".repeat(65)}`, authorization: authorizationFor(accepted, from) },
  };
  return encodePaymentSignatureHeader(payload);
}

/** Every JSON-RPC method asked of RPC_URL; eth_call answers `eth_call` (a revert by default). */
function rpcDouble(eth_call: () => object = () => ({ error: { code: 3, message: "execution reverted" } })) {
  const asked: string[] = [];
  const realFetch = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const req = new Request(input, init);
    if (req.url !== RPC) return realFetch(input, init);
    const { id, method } = await req.json<{ id: number; method: string }>();
    asked.push(method);
    const ok = (result: unknown) => Response.json({ jsonrpc: "2.0", id, result });
    if (method === "eth_chainId") return ok(`0x${Number(env.X402_NETWORK.split(":")[1]).toString(16)}`);
    if (method === "eth_getCode") return ok("0x6080604052");
    return Response.json({ jsonrpc: "2.0", id, ...eth_call() });
  });
  return asked;
}

/** One paid uuid-mint call of a real EOA under a fresh payment id. */
async function paidCall() {
  const payer = privateKeyToAccount(generatePrivateKey());
  const id = generatePaymentId();
  const { payload } = await signedPayment(await required(), payer, id);
  const paid = await post(paidEnv, { "payment-signature": encodePaymentSignatureHeader(payload) });
  expect(paid.status).toBe(200);
  return { payer: payer.address, id };
}

describe("a payment id already used costs no chain read unless the stored answer could be the request's", {
  timeout: 60_000,
  ...ONE_MORE_RUN,
}, () => {
  installWindowGuard();
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("20 requests reusing a paid call's id, in a contract's or its payer's name, with junk signatures and other bodies: 409 each, no RPC call", async () => {
    const { payer, id } = await paidCall();
    const asked = rpcDouble();
    const answers: Response[] = [];
    for (let i = 0; i < 20; i++) {
      const from = i % 2 ? payer : env.USDC_ADDRESS;
      answers.push(
        await post(paidEnv, { "payment-signature": await junkSigned(from, id) }, { count: 3 + i }),
      );
    }
    expect(asked).toEqual([]);
    for (const res of answers) {
      expect(res.status).toBe(409);
      const body = await res.json<{ reason: string; request_id?: string; detail: string }>();
      expect(body.reason).toBe("idempotency_key_mismatch");
      // Nothing about the stored call is told to a payer not proven: not its request, not whose.
      expect(body.request_id).toBeUndefined();
      expect(body.detail).not.toMatch(/another payer|uuid-mint/);
    }
  });

  it("in the stored payer's name with its request but a junk signature: the chain is asked at most RL_FREE times a minute per IP, then 429", async () => {
    const { payer, id } = await paidCall();
    const asked = rpcDouble();
    const limited = { ...paidEnv, RATE_LIMITS: "on" };
    const ip = randomIp();
    const statuses: number[] = [];
    // The limiter's windows are wall-clock minutes: the flood must fall in one to count exactly.
    await freshWindow();
    for (let i = 0; i < LIMITS.RL_FREE + 5; i++) {
      const res = await post(limited, {
        "payment-signature": await junkSigned(payer, id),
        "cf-connecting-ip": ip,
      });
      statuses.push(res.status);
      if (res.status === 429)
        expect(await res.json()).toMatchObject({ reason: "rate_limited", scope: "free" });
      else expect(await res.json()).toMatchObject({ reason: "payment_signature_unproven" });
    }
    expect(statuses.filter((s) => s === 409)).toHaveLength(LIMITS.RL_FREE);
    expect(statuses.filter((s) => s === 429)).toHaveLength(5);
    // eth_getCode and eth_call per proof (and eth_chainId once per isolate at most).
    expect(asked.filter((m) => m !== "eth_chainId")).toHaveLength(2 * LIMITS.RL_FREE);
  });
});

describe("a contract wallet polling its own call while it runs", { timeout: 30_000 }, () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("gets the in-flight 409 every time, told to retry in 2 s, spending no proof of the per-IP budget", async () => {
    // The call under this id, in a contract wallet's name, is still running (a long skill, or
    // a settlement waited for): its stored row is as the first request's claim wrote it.
    const wallet = env.USDC_ADDRESS;
    const id = generatePaymentId();
    const fp = {
      method: "POST",
      path: PATH,
      body_sha256: await sha256Hex(JSON.stringify({ count: 2 })),
      principal: `x402:${wallet.toLowerCase()}`,
    };
    expect(await claim(env.DB, `x402:${id}`, fp, "req-still-running")).toBe(true);
    // Every signature would be proven: the wallet really signed.
    const asked = rpcDouble(() => ({ result: `0x1626ba7e${"0".repeat(56)}` }));
    const limited = { ...paidEnv, RATE_LIMITS: "on" };
    const ip = randomIp();
    for (let i = 0; i < LIMITS.RL_FREE + 5; i++) {
      const res = await post(limited, {
        "payment-signature": await junkSigned(wallet, id),
        "cf-connecting-ip": ip,
      });
      expect(res.status).toBe(409);
      expect(res.headers.get("retry-after")).toBe("2");
      const body = await res.json<{ reason: string; request_id?: string }>();
      expect(body.reason).toBe("idempotent_request_in_flight");
      // Unproven, so not told which request holds it.
      expect(body.request_id).toBeUndefined();
    }
    expect(asked).toEqual([]);
  });
});

/** env.DB that notes the SQL of every statement prepared on it. */
function recordingDb() {
  const sql: string[] = [];
  const db = new Proxy(env.DB, {
    get(target, prop) {
      if (prop === "prepare")
        return (text: string) => {
          sql.push(text.replace(/\s+/g, " ").trim());
          return target.prepare(text);
        };
      const value = Reflect.get(target, prop);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { db, sql };
}

describe("a card key that does not exist claims no idempotency key", { timeout: 30_000 }, () => {
  it("Bearer mk_<random> with an Idempotency-Key: 401, with no write to idempotent_results", async () => {
    const { db, sql } = recordingDb();
    const unknown = `mk_${[...crypto.getRandomValues(new Uint8Array(16))].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
    const res = await post(
      { ...paidEnv, DB: db },
      { authorization: `Bearer ${unknown}`, "idempotency-key": "k1" },
    );
    expect(res.status).toBe(401);
    expect(sql.filter((s) => /idempotent_results/.test(s))).toEqual([]);
  });

  it("a real key keeps its guarantee: the retry gets the stored answer and spends no second credit", async () => {
    const key = await keyWith(env.DB, 2, "uuid_mint");
    const headers = { authorization: `Bearer ${key}`, "idempotency-key": "k1" };
    const first = await post(paidEnv, headers);
    expect(first.status).toBe(200);
    const retry = await post(paidEnv, headers);
    expect(retry.headers.get("x-idempotent-replay")).toBe("true");
    expect(await retry.text()).toBe(await first.text());
    expect(await callsLeft(env.DB, key)).toBe(1);
  });
});
