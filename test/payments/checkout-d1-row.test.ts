import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import worker from "../../src/index";
import { FIRST_CALL_MAX_BYTES } from "../../src/payments/checkout-request";
import { D1_BODY_MAX } from "../../src/payments/idempotent-results";
import { detailOf, postJson } from "../helpers";
import {
  checkoutSeeingStripe,
  deliver,
  FIRST_CALL_COSTS,
  keyIn,
  keysFor,
  revealTokenFromPage,
  seedSession,
  sessionEvent,
  sessionRow,
  successPage,
} from "./checkout-helpers";

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
const _app = createApp();
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

const stripeRequests = (body: unknown) => checkoutSeeingStripe(JSON.stringify(body));

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
    const { res, sent } = await stripeRequests({ skill_id: "json_sort", payload: payloadOf(2_100_000) });
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
    const over = await stripeRequests({ skill_id: "json_sort", payload: payloadOf(PAYLOAD_MAX + 1) });
    expect(over.res.status).toBe(422);
    expect(over.sent).toEqual([]);
    // The same recording sees the session the bound itself creates: an empty list above is Stripe
    // not asked, not a request the recording missed.
    const at = await stripeRequests({ skill_id: "json_sort", payload: payloadOf(PAYLOAD_MAX) });
    expect(at.res.status).toBe(200);
    expect(at.sent).toEqual(["POST /v1/checkout/sessions"]);
    // Multi-byte characters count as the UTF-8 bytes D1 stores, not as characters.
    const wide = await postJson("/api/cardpay/checkout", {
      skill_id: "json_sort",
      payload: { data: "é".repeat(PAYLOAD_MAX / 2) },
    });
    expect(wide.status).toBe(422);
    expect([FIRST_CALL_MAX_BYTES, D1_BODY_MAX]).toEqual([PAYLOAD_MAX, INLINE_ANSWER_MAX]);
  });

  it.each(FIRST_CALL_COSTS)(
    "the largest payload's answer (json_sort, ~2.1×) is kept in KV: stored, shown, its credit spent (none in free beta), the row under 2 MB ($mode)",
    async ({ bindings, spent, ran }) => {
      const id = await seedSession("json_sort", undefined, payloadOf(PAYLOAD_MAX));
      const event = await sessionEvent("checkout.session.completed", id);
      expect((await deliver(event, undefined, bindings)).status).toBe(200);
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
      expect(key?.calls_left).toBe((key?.calls_total ?? 0) - spent);
      const page = await successPage(id, bindings);
      expect(page).toContain(ran);
      expect(page).toContain(`${dataBytes}`);
    },
    60_000,
  );

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

/**
 * D1 with some statements failing as D1 does (a write refused, a read lost): a statement for
 * which `fails` names an error throws it when run or batched. Handed to the Worker as its binding.
 */
function failingDb(fails: (sql: string) => string | undefined): D1Database {
  const db = env.DB;
  const failing = new WeakMap<object, string>();
  const failingStatement = (error: string): D1PreparedStatement => {
    const refuse = () => Promise.reject(new Error(error));
    const stmt = {
      bind: () => stmt,
      run: refuse,
      first: refuse,
      all: refuse,
      raw: refuse,
    } as unknown as D1PreparedStatement;
    failing.set(stmt, error);
    return stmt;
  };
  return new Proxy(db, {
    get(target, prop) {
      if (prop === "prepare") {
        return (sql: string) => {
          const error = fails(sql);
          return error ? failingStatement(error) : target.prepare(sql);
        };
      }
      if (prop === "batch") {
        return (stmts: D1PreparedStatement[]) => {
          const error = stmts.map((s) => failing.get(s)).find(Boolean);
          return error ? Promise.reject(new Error(error)) : target.batch(stmts);
        };
      }
      const value = Reflect.get(target, prop);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

const REFUSED = `D1_ERROR: ${TOO_BIG}: SQLITE_TOOBIG`;
const LOST = "D1_ERROR: Network connection lost.";

async function revealWith(id: string, token: string, db: D1Database, kv: KVNamespace = env.KV) {
  const ctx = createExecutionContext();
  const res = await worker.fetch(
    new Request(`https://skills.test/checkout/success?session_id=${id}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token }).toString(),
    }),
    { ...env, DB: db, KV: kv },
    ctx,
  );
  const html = await res.text();
  await waitOnExecutionContext(ctx);
  return { status: res.status, html };
}

describe("the Reveal POST shows the key whatever the first call's run does", () => {
  it("its run's answer is refused by D1 and the balance read fails after the key was taken: still the key", async () => {
    // Paid, webhook late: this POST grants, starts the run and waits for it.
    const id = await seedSession("json_sort", undefined, { data: { b: 1, a: 2 } });
    const token = (await revealTokenFromPage(id)) as string;
    const db = failingDb((sql) =>
      sql.includes("SET payload_result") ? REFUSED : sql.includes("SELECT calls_left") ? LOST : undefined,
    );
    const { status, html } = await revealWith(id, token, db);
    // Before, the balance read after the one reveal was a 500, and the key was gone with it.
    expect(status).toBe(200);
    expect(keyIn(html)).toBeTruthy();
    expect(html).toContain("Running…");
    // The run stored nothing and spent nothing: the page can run it again once its claim is stale.
    const row = await sessionRow(id);
    expect(row?.payload_result).toBeNull();
    const [key] = (await keysFor(id)).results;
    expect(key?.calls_left).toBe(key?.calls_total);
  }, 30_000);

  it("the wait's own reads fail once the run started: still the key, not a 500", async () => {
    const id = await seedSession("json_sort", undefined, { data: { b: 1, a: 2 } });
    const token = (await revealTokenFromPage(id)) as string;
    let runStarted = false;
    const db = failingDb((sql) => {
      if (sql.includes("SET payload_started_at")) runStarted = true;
      return runStarted && sql.startsWith("SELECT * FROM checkout_sessions") ? LOST : undefined;
    });
    const { status, html } = await revealWith(id, token, db);
    expect(status).toBe(200);
    expect(keyIn(html)).toBeTruthy();
  }, 30_000);

  it.each(FIRST_CALL_COSTS)(
    "an answer kept in KV that cannot be read yet shows as running: the key is shown ($mode)",
    async ({ bindings, ran }) => {
      const id = await seedSession("json_sort", undefined, payloadOf(300_000));
      const token = (await revealTokenFromPage(id)) as string;
      await deliver(await sessionEvent("checkout.session.completed", id), undefined, bindings);
      expect(JSON.parse(await storedAnswer(id))).toMatchObject({ body_kv: expect.any(String) });
      const kv = new Proxy(env.KV, {
        get(target, prop) {
          if (prop === "get")
            return () => Promise.reject(new Error("KV GET failed: 503 Service Unavailable"));
          const value = Reflect.get(target, prop);
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
      const { status, html } = await revealWith(id, token, env.DB, kv);
      expect(status).toBe(200);
      expect(keyIn(html)).toBeTruthy();
      expect(html).toContain("Running…");
      // Once KV answers, the page shows it.
      expect(await successPage(id, bindings)).toContain(ran);
    },
    30_000,
  );
});
