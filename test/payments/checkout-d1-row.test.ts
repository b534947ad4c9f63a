import { env } from "cloudflare:test";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { FIRST_CALL_MAX_BYTES } from "../../src/payments/checkout-request";
import { D1_BODY_MAX } from "../../src/payments/idempotent-results";
import { call, detailOf, postJson } from "../helpers";
import { deliver, EMULATOR, keysFor, seedSession, sessionEvent, sessionRow } from "./checkout-helpers";

/**
 * D1 refuses a string, BLOB or row over 2,000,000 bytes (developers.cloudflare.com/d1/platform/
 * limits) with "D1_ERROR: string or blob too big: SQLITE_TOOBIG"; miniflare's SQLite allows 1 GB.
 * These triggers make the test database refuse a checkout_sessions row over the limit the same
 * way, inside the statement, so a batch that would write one rolls back as it does on D1.
 */
const D1_ROW_MAX = 2_000_000;
// The documented bounds, written out: sizes here must not depend on the code under test.
const PAYLOAD_MAX = 1024 * 1024;
const INLINE_ANSWER_MAX = 512 * 1024;
const TOO_BIG = "string or blob too big";
const rowBytes = (row: string) =>
  ["id", "skill_id", "status", "payload", "payload_result", "api_key_id", "api_key_reveal", "payment_intent"]
    .map((col) => `coalesce(length(CAST(${row}.${col} AS BLOB)), 0)`)
    .join(" + ");

beforeAll(async () => {
  for (const op of ["INSERT", "UPDATE"]) {
    await env.DB.prepare(
      `CREATE TRIGGER IF NOT EXISTS test_d1_row_limit_${op.toLowerCase()} BEFORE ${op} ON checkout_sessions
       WHEN ${rowBytes("NEW")} + 48 > ${D1_ROW_MAX}
       BEGIN SELECT RAISE(ABORT, '${TOO_BIG}'); END`,
    ).run();
  }
});

afterAll(async () => {
  await env.DB.prepare("DROP TRIGGER IF EXISTS test_d1_row_limit_insert").run();
  await env.DB.prepare("DROP TRIGGER IF EXISTS test_d1_row_limit_update").run();
});

afterEach(() => {
  vi.restoreAllMocks();
});

/** Requests the Worker sends to Stripe (the emulator) while `run` runs. */
async function stripeRequests(run: () => Promise<Response>) {
  const real = globalThis.fetch;
  const sent: string[] = [];
  vi.spyOn(globalThis, "fetch").mockImplementation((input, init) => {
    const req = new Request(input, init);
    if (req.url.startsWith(EMULATOR)) sent.push(`${req.method} ${new URL(req.url).pathname}`);
    return real(input, init);
  });
  const res = await run();
  vi.restoreAllMocks();
  return { res, sent };
}

/** A json_sort payload whose stored JSON (`{"data":"xx…"}`) is exactly `bytes` long. */
const payloadOf = (bytes: number) => ({ data: "x".repeat(bytes - '{"data":""}'.length) });

const storedBytes = async (id: string) =>
  (
    await env.DB.prepare(`SELECT ${rowBytes("s")} AS n FROM checkout_sessions s WHERE id = ?1`)
      .bind(id)
      .first<{ n: number }>()
  )?.n;

async function storedAnswer(id: string, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const row = await sessionRow(id);
    if (row?.payload_result) return row.payload_result as string;
    if (Date.now() > deadline) throw new Error(`no first-call answer stored for ${id}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("a checkout's first call fits D1's 2,000,000-byte row", () => {
  it("the test database refuses an oversized row with D1's error, as D1 does", async () => {
    const id = `cs_test_row_${crypto.randomUUID()}`;
    const insert = env.DB.prepare(
      `INSERT INTO checkout_sessions (id, skill_id, calls, amount_cents, status, payload, created_at, updated_at)
       VALUES (?1, 'json_sort', 1, 51, 'open', ?2, 0, 0)`,
    ).bind(id, "x".repeat(D1_ROW_MAX));
    await expect(insert.run()).rejects.toThrow(TOO_BIG);
  });

  it("a payload the row cannot hold is a 422 on body.payload, and Stripe is not asked", async () => {
    // 2.1 MB: under the 5 MiB body cap. It used to create the Stripe session and then fail its
    // D1 insert: a 500 for a session that existed (and, with an Idempotency-Key, replayed).
    const { res, sent } = await stripeRequests(() =>
      postJson("/api/cardpay/checkout", { skill_id: "json_sort", payload: payloadOf(2_100_000) }),
    );
    expect(res.status).toBe(422);
    const [item, ...rest] = await detailOf(res);
    expect(rest).toEqual([]);
    expect(item).toMatchObject({
      loc: ["body", "payload"],
      type: "payload_too_large",
      input: null,
      ctx: { max_bytes: PAYLOAD_MAX },
    });
    expect(sent).toEqual([]);
  });

  it("the bound is exact: one byte over is a 422, the bound itself a checkout", async () => {
    const over = await stripeRequests(() =>
      postJson("/api/cardpay/checkout", {
        skill_id: "json_sort",
        payload: payloadOf(PAYLOAD_MAX + 1),
      }),
    );
    expect(over.res.status).toBe(422);
    expect(over.sent).toEqual([]);
    const at = await postJson("/api/cardpay/checkout", {
      skill_id: "json_sort",
      payload: payloadOf(PAYLOAD_MAX),
    });
    expect(at.status).toBe(200);
    // Multi-byte characters count as the UTF-8 bytes D1 stores, not as characters.
    const wide = await postJson("/api/cardpay/checkout", {
      skill_id: "json_sort",
      payload: { data: "é".repeat(PAYLOAD_MAX / 2) },
    });
    expect(wide.status).toBe(422);
    expect([FIRST_CALL_MAX_BYTES, D1_BODY_MAX]).toEqual([PAYLOAD_MAX, INLINE_ANSWER_MAX]);
  });

  it("the largest payload's answer (json_sort, ~2.1×) is kept in KV: stored, shown, its credit spent, the row under 2 MB", async () => {
    const id = await seedSession("json_sort", undefined, payloadOf(PAYLOAD_MAX));
    expect((await deliver(await sessionEvent("checkout.session.completed", id))).status).toBe(200);
    // Before, the answer's write made a 3.2 MB row: D1 refused it and the paid answer never came.
    const stored = await storedAnswer(id);
    const ref = JSON.parse(stored) as { status: number; body_kv: string };
    expect(ref).toEqual({ status: 200, body_kv: expect.stringMatching(/^first-call:/) });
    const answer = await env.KV.get(ref.body_kv, "text");
    const result = JSON.parse(answer as string) as { status: number; body: { bytes: number } };
    const dataBytes = PAYLOAD_MAX - '{"data":}'.length;
    expect(result).toMatchObject({ status: 200, body: { bytes: dataBytes } });
    expect(new TextEncoder().encode(answer as string).length).toBeGreaterThan(2 * PAYLOAD_MAX);
    // The row holds the payload and a reference: the largest row any first call can leave is
    // the payload bound plus an inline answer of at most INLINE_ANSWER_MAX, under D1's limit.
    expect(await storedBytes(id)).toBeLessThan(PAYLOAD_MAX + 1024);
    expect(PAYLOAD_MAX + INLINE_ANSWER_MAX + 1024).toBeLessThan(D1_ROW_MAX);
    const [key] = (await keysFor(id)).results;
    expect(key?.calls_left).toBe((key?.calls_total ?? 0) - 1);
    const page = await (await call(`/checkout/success?session_id=${id}`)).text();
    expect(page).toContain("Ran with the payload you sent (one credit spent).");
    expect(page).toContain(`${dataBytes}`);
  }, 60_000);

  it("an answer over 512 KiB goes to KV; a smaller one stays in the row", async () => {
    // json_sort answers ~2× the data: a 300 KB payload's answer passes 512 KiB, a 100 KB one does not.
    const big = await seedSession("json_sort", undefined, payloadOf(300_000));
    const small = await seedSession("json_sort", undefined, payloadOf(100_000));
    await deliver(await sessionEvent("checkout.session.completed", big));
    await deliver(await sessionEvent("checkout.session.completed", small));
    expect(JSON.parse(await storedAnswer(big))).toMatchObject({ status: 200, body_kv: expect.any(String) });
    expect(JSON.parse(await storedAnswer(small))).toMatchObject({ status: 200, body: { bytes: 99_991 } });
  }, 60_000);
});
