import { env } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { sha256Hex } from "../../src/digest";
import { hashKey } from "../../src/payments/credits";
import { QUERY_KEPT_MAX } from "../../src/payments/idempotency";
import { RESULT_ROW_MAX } from "../../src/payments/idempotent-results";
import { callsLeft, keyWith } from "../fixtures/credits";

// Where a stored idempotent answer is kept: in its D1 row only when small, else in KV under the
// window's TTL, so paid calls with fresh keys cannot fill the database within a day.
const cardEnv = { ...env, FREE_BETA: "false", X402_ENABLED: "false" };
const app = createApp();

/** A json_sort call under an Idempotency-Key, paid with a card key; `data` sets the answer's size. */
const sortCall = (key: string, idem: string, data: unknown, e: object = cardEnv) =>
  app.fetch(
    new Request("https://skills.test/api/skills/json-sort", {
      method: "POST",
      headers: {
        authorization: `Bearer ${key}`,
        "idempotency-key": idem,
        "content-type": "application/json",
      },
      body: JSON.stringify({ data }),
    }),
    e,
  );

const storedRow = (requestId: string | null) =>
  env.DB.prepare("SELECT length(body) AS body_bytes, body_kv FROM idempotent_results WHERE request_id = ?1")
    .bind(requestId)
    .first<{ body_bytes: number | null; body_kv: string | null }>();

describe("a stored idempotent answer over 16 KiB", () => {
  it("goes to KV (the row keeps only where), and a retry gets it back byte for byte without a second credit", async () => {
    const key = await keyWith(env.DB, 3, "json_sort");
    // ~60 KB of input: json_sort answers about twice that, over 16 KiB and under the old 512 KiB.
    const data = Object.fromEntries(Array.from({ length: 600 }, (_, i) => [`k${i}`, "é".repeat(40) + i]));
    const idem = `big-${crypto.randomUUID()}`;
    const first = await sortCall(key, idem, data);
    expect(first.status).toBe(200);
    const bytes = new Uint8Array(await first.arrayBuffer());
    expect(bytes.byteLength).toBeGreaterThan(RESULT_ROW_MAX);
    expect(bytes.byteLength).toBeLessThan(512 * 1024);
    const row = await storedRow(first.headers.get("x-request-id"));
    expect(row).toEqual({
      body_bytes: null,
      body_kv: `idempotent:${await sha256Hex(`card:${await hashKey(key)}:${idem}`)}`,
    });
    const kept = await env.KV.getWithMetadata(row?.body_kv as string, "arrayBuffer");
    expect(new Uint8Array(kept.value as ArrayBuffer)).toEqual(bytes);
    const retry = await sortCall(key, idem, data);
    expect(retry.status).toBe(200);
    expect(retry.headers.get("x-idempotent-replay")).toBe("true");
    expect(new Uint8Array(await retry.arrayBuffer())).toEqual(bytes);
    expect(await callsLeft(env.DB, key)).toBe(2);
  });

  it("an answer of at most 16 KiB stays in its row", async () => {
    const key = await keyWith(env.DB, 1, "json_sort");
    const first = await sortCall(key, `small-${crypto.randomUUID()}`, { b: 1, a: 2 });
    expect(first.status).toBe(200);
    const text = await first.text();
    const row = await storedRow(first.headers.get("x-request-id"));
    expect(row).toEqual({ body_bytes: text.length, body_kv: null });
  });

  it("a KV answer not yet visible where the retry runs is 503 idempotent_result_unavailable with Retry-After, never 'expired'", async () => {
    const key = await keyWith(env.DB, 2, "json_sort");
    const data = Object.fromEntries(Array.from({ length: 600 }, (_, i) => [`k${i}`, "x".repeat(40)]));
    const idem = `unseen-${crypto.randomUUID()}`;
    const first = await sortCall(key, idem, data);
    expect(first.status).toBe(200);
    const body = await first.text();
    // KV as another location sees it within a minute of the write: the key is not there yet.
    const notYet = new Proxy(env.KV, {
      get(target, prop) {
        if (prop === "get") return () => Promise.resolve(null);
        const value = Reflect.get(target, prop);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const retry = await sortCall(key, idem, data, { ...cardEnv, KV: notYet });
      expect(retry.status).toBe(503);
      expect(retry.headers.get("retry-after")).toBe("2");
      expect(await retry.json()).toMatchObject({
        reason: "idempotent_result_unavailable",
        request_id: first.headers.get("x-request-id"),
      });
    } finally {
      errors.mockRestore();
    }
    const later = await sortCall(key, idem, data);
    expect(later.headers.get("x-idempotent-replay")).toBe("true");
    expect(await later.text()).toBe(body);
    expect(await callsLeft(env.DB, key)).toBe(1);
  });

  /** KV with one method replaced. */
  const kvWith = (prop: string, fn: unknown) =>
    new Proxy(env.KV, {
      get(target, p) {
        if (p === prop) return fn;
        const value = Reflect.get(target, p);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  const bigData = Object.fromEntries(Array.from({ length: 600 }, (_, i) => [`k${i}`, "y".repeat(40)]));

  it("KV refusing the write keeps an answer D1 can hold in its row: the retry replays it, and pays nothing again", async () => {
    const key = await keyWith(env.DB, 3, "json_sort");
    const idem = `kvdown-${crypto.randomUUID()}`;
    const kvDown = kvWith("put", () => Promise.reject(new Error("KV PUT failed: 429 Too Many Requests")));
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    let body: string;
    try {
      const first = await sortCall(key, idem, bigData, { ...cardEnv, KV: kvDown });
      expect(first.status).toBe(200);
      body = await first.text();
      expect(body.length).toBeGreaterThan(RESULT_ROW_MAX);
      expect(await storedRow(first.headers.get("x-request-id"))).toEqual({
        body_bytes: body.length,
        body_kv: null,
      });
    } finally {
      errors.mockRestore();
    }
    const retry = await sortCall(key, idem, bigData);
    expect(retry.headers.get("x-idempotent-replay")).toBe("true");
    expect(await retry.text()).toBe(body);
    expect(await callsLeft(env.DB, key)).toBe(2);
  });

  it("a KV answer still missing minutes after its store is lost, not late: 409 idempotent_result_expired (logged), not an endless 503", async () => {
    const key = await keyWith(env.DB, 2, "json_sort");
    const idem = `lost-${crypto.randomUUID()}`;
    const first = await sortCall(key, idem, bigData);
    expect(first.status).toBe(200);
    const requestId = first.headers.get("x-request-id");
    await env.DB.prepare(
      "UPDATE idempotent_results SET created_at = created_at - 3600000, updated_at = updated_at - 3600000 WHERE request_id = ?1",
    )
      .bind(requestId)
      .run();
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const retry = await sortCall(key, idem, bigData, {
        ...cardEnv,
        KV: kvWith("get", () => Promise.resolve(null)),
      });
      expect(retry.status).toBe(409);
      expect(await retry.json()).toMatchObject({
        reason: "idempotent_result_expired",
        request_id: requestId,
      });
      expect(errors.mock.calls.flat().join("\n")).toMatch(/idempotent answer lost/);
      // The agents' guide names the reason among its 409s.
      const guide = await (await app.fetch(new Request("https://skills.test/AGENTS.md"), env)).text();
      expect(/^- `409`.*$/m.exec(guide)?.[0]).toContain("`idempotent_result_expired`");
    } finally {
      errors.mockRestore();
    }
    expect(await callsLeft(env.DB, key)).toBe(1);
  });
});

describe("a paid call's query in its stored row", () => {
  /** A json_sort call under an Idempotency-Key with `query` after its path. */
  const queried = (key: string, idem: string, query: string) =>
    app.fetch(
      new Request(`https://skills.test/api/skills/json-sort?${query}`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${key}`,
          "idempotency-key": idem,
          "content-type": "application/json",
        },
        body: JSON.stringify({ data: { b: 1, a: 2 } }),
      }),
      cardEnv,
    );
  const storedPath = (requestId: string | null) =>
    env.DB.prepare("SELECT path FROM idempotent_results WHERE request_id = ?1")
      .bind(requestId)
      .first<string>("path");

  it("a long query is kept by its digest: the row does not grow with it, and it still tells two calls apart", async () => {
    const key = await keyWith(env.DB, 3, "json_sort");
    const idem = `query-${crypto.randomUUID()}`;
    const query = `q=${"a".repeat(16_000)}`;
    const first = await queried(key, idem, query);
    expect(first.status).toBe(200);
    const body = await first.text();
    const path = await storedPath(first.headers.get("x-request-id"));
    expect(path).toBe(`/api/skills/json-sort#query-sha256:${await sha256Hex(`?${query}`)}`);
    // The same call again is its replay, not a second credit.
    const retry = await queried(key, idem, query);
    expect(retry.headers.get("x-idempotent-replay")).toBe("true");
    expect(await retry.text()).toBe(body);
    // Another long query under the key is another request.
    const other = await queried(key, idem, `q=${"b".repeat(16_000)}`);
    expect(other.status).toBe(409);
    expect(await other.json()).toMatchObject({ reason: "idempotency_key_mismatch" });
    expect(await callsLeft(env.DB, key)).toBe(2);
  });

  it(`a query of ${QUERY_KEPT_MAX} characters (its \`?\` not counted) is kept as written, one more by its digest`, async () => {
    const key = await keyWith(env.DB, 2, "json_sort");
    const kept = `q=${"c".repeat(QUERY_KEPT_MAX - 2)}`;
    expect(kept).toHaveLength(256);
    const first = await queried(key, `short-${crypto.randomUUID()}`, kept);
    expect(first.status).toBe(200);
    expect(await storedPath(first.headers.get("x-request-id"))).toBe(`/api/skills/json-sort?${kept}`);
    const digested = `${kept}c`;
    const second = await queried(key, `long-${crypto.randomUUID()}`, digested);
    expect(second.status).toBe(200);
    expect(await storedPath(second.headers.get("x-request-id"))).toBe(
      `/api/skills/json-sort#query-sha256:${await sha256Hex(`?${digested}`)}`,
    );
  });

  it("a long query's row stored as written (before QUERY_KEPT_MAX) still answers its retry, not a 409 mismatch", async () => {
    const key = await keyWith(env.DB, 2, "json_sort");
    const idem = `old-${crypto.randomUUID()}`;
    const query = `q=${"d".repeat(1_000)}`;
    const first = await queried(key, idem, query);
    expect(first.status).toBe(200);
    const body = await first.text();
    const requestId = first.headers.get("x-request-id");
    // The row as the code before the digest wrote it: path and query as written.
    const asWritten = `/api/skills/json-sort?${query}`;
    await env.DB.prepare("UPDATE idempotent_results SET path = ?1 WHERE request_id = ?2")
      .bind(asWritten, requestId)
      .run();
    const retry = await queried(key, idem, query);
    expect(retry.status).toBe(200);
    expect(retry.headers.get("x-idempotent-replay")).toBe("true");
    expect(await retry.text()).toBe(body);
    // Still running in an old isolate: the retry is told to wait for it, not to use a new key.
    await env.DB.prepare("UPDATE idempotent_results SET status = 'running' WHERE request_id = ?1")
      .bind(requestId)
      .run();
    const waiting = await queried(key, idem, query);
    expect(waiting.status).toBe(409);
    expect(await waiting.json()).toMatchObject({ reason: "idempotent_request_in_flight" });
    // Another query under that key is still another request.
    const other = await queried(key, idem, `q=${"e".repeat(1_000)}`);
    expect(await other.json()).toMatchObject({ reason: "idempotency_key_mismatch" });
    expect(await callsLeft(env.DB, key)).toBe(1);
  });
});
