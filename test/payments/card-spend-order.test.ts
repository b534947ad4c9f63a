import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { hashKey, newApiKey } from "../../src/payments/credits";
import { callsLeft, keyWith } from "../fixtures/credits";
import { mcpCall } from "../helpers";
import { cardEnv } from "./checkout-helpers";

// A card call's credit is taken only once its body is valid (payments/gate.ts cardCreditSpend), as
// an x402 call with a bad body is not settled: a 422 leaves the key as it was, with no spend row
// (card_spends) written, and cannot take a last credit from a good call sent beside it.
const app = createApp();
const URL_SHA256 = "https://skills.test/api/skills/sha256";

const call = (key: string, body: BodyInit) =>
  app.fetch(
    new Request(URL_SHA256, { method: "POST", headers: { authorization: `Bearer ${key}` }, body }),
    cardEnv,
  );

/** The card_spends rows (spends, given back or not, and markers) written for the key. */
const spendRows = async (key: string) =>
  (
    await env.DB.prepare("SELECT COUNT(*) AS n FROM card_spends WHERE key_hash = ?1")
      .bind(await hashKey(key))
      .first<{ n: number }>()
  )?.n;

/**
 * A call of `key` whose body `text` the test hands over when it chooses: `read` resolves once the
 * route starts reading it (past the payment gate: jsonBody reads the body only after it; its
 * declared length lets the body cap pass it unread), `send` then gives it.
 */
function heldCall(key: string, text: string) {
  const bytes = new TextEncoder().encode(text);
  let reading!: () => void;
  const read = new Promise<void>((r) => (reading = r));
  let send!: () => void;
  const sent = new Promise<void>((r) => (send = r));
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(ctl) {
        reading();
        await sent;
        ctl.enqueue(bytes);
        ctl.close();
      },
    },
    { highWaterMark: 0 },
  );
  const headers = { authorization: `Bearer ${key}`, "content-length": String(bytes.byteLength) };
  const res = app.fetch(new Request(URL_SHA256, { method: "POST", headers, body }), cardEnv);
  return { res, read, send };
}

describe("a card call with a bad body", () => {
  it("is a 422 that keeps every credit and writes no spend row", async () => {
    const key = await keyWith(env.DB, 3, "sha256");
    const res = await call(key, JSON.stringify({ text: 5 }));
    expect(res.status).toBe(422);
    expect((await res.json<{ detail: { loc: unknown }[] }>()).detail[0]?.loc).toEqual(["body", "text"]);
    expect(await callsLeft(env.DB, key)).toBe(3);
    expect(await spendRows(key)).toBe(0);
    const broken = await call(key, "{not json");
    expect(broken.status).toBe(422);
    expect(await callsLeft(env.DB, key)).toBe(3);
    expect(await spendRows(key)).toBe(0);
  });

  it("over MCP: the tool's invalid-arguments error, nothing spent, no spend row", async () => {
    const key = await keyWith(env.DB, 3, "sha256");
    const { result } = await mcpCall(app, cardEnv, "sha256", { text: 5 }, undefined, {
      authorization: `Bearer ${key}`,
    });
    expect(result.isError).toBe(true);
    expect(result.content[0]).toMatchObject({
      text: expect.stringMatching(/^Invalid arguments \(not charged\): body\.text/),
    });
    expect(await callsLeft(env.DB, key)).toBe(3);
    expect(await spendRows(key)).toBe(0);
  });

  it("with a key that cannot pay: the 422 too, the key's own 401/403/402 once the body is valid", async () => {
    const keys = [newApiKey(), await keyWith(env.DB, 3, "slugify"), await keyWith(env.DB, 0, "sha256")];
    for (const key of keys) expect((await call(key, "{not json")).status).toBe(422);
    const good = JSON.stringify({ text: "abc" });
    expect(await Promise.all(keys.map(async (key) => (await call(key, good)).status))).toEqual([
      401, 403, 402,
    ]);
  });
});

describe("two calls on the last credit", () => {
  it("a bad body read while a good one is sent: the good one runs, the bad one is a 422", async () => {
    const key = await keyWith(env.DB, 1, "sha256");
    const bad = heldCall(key, JSON.stringify({ text: 5 }));
    await bad.read; // the bad call is past the payment gate, reading its body
    const good = await call(key, JSON.stringify({ text: "abc" }));
    expect(good.status).toBe(200);
    expect(good.headers.get("x-credits-remaining")).toBe("0");
    bad.send();
    expect((await bad.res).status).toBe(422);
    expect(await callsLeft(env.DB, key)).toBe(0);
    expect(await spendRows(key)).toBe(1);
  });

  it("both good: the one whose body came last gets the no-credit 402 after its body", async () => {
    const key = await keyWith(env.DB, 1, "sha256");
    const late = heldCall(key, JSON.stringify({ text: "abc" }));
    await late.read;
    expect((await call(key, JSON.stringify({ text: "abc" }))).status).toBe(200);
    late.send();
    const res = await late.res;
    expect(res.status).toBe(402);
    expect((await res.json<{ detail: string }>()).detail).toMatch(/^This key has no sha256 credits left\./);
    expect(await callsLeft(env.DB, key)).toBe(0);
  });
});
