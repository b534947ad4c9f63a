import { env } from "cloudflare:test";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { callsLeft, keyWith } from "../fixtures/credits";
import { FIXTURE } from "../fixtures/upstream-requests";
import { detailOf, mcpInit } from "../helpers";

// What the reviewer found at the HTTP edges: requests no client should send, which must still get
// the documented answer (a 402 with the offer, a 4xx in JSON), never a 500 or a silent change.
const app = createApp();
const ORIGIN = "https://skills.test";
const paidEnv = { ...env, FREE_BETA: "false", FACILITATOR_URL: `${FIXTURE}/facilitator` };
const betaEnv = { ...env, FREE_BETA: "true", FACILITATOR_URL: `${FIXTURE}/facilitator` };

const send = (path: string, init: RequestInit, e: object) =>
  app.fetch(new Request(`${ORIGIN}${path}`, init), e);

/** A payment-identifier extension with a valid id: identify() reads it before the gate runs. */
const withId = { "payment-identifier": { info: { id: "abcdefghijklmnopqrst" } } };
const b64 = (value: unknown) => btoa(JSON.stringify(value));

describe("a PAYMENT-SIGNATURE that is not a payment is refused as such on every paid route, never a 500", () => {
  const notPayments: [string, string][] = [
    ["null", btoa("null")],
    ["an id and no payload", b64({ extensions: withId })],
    ["an id and payload null", b64({ x402Version: 2, payload: null, extensions: withId })],
    ["an id and payload a string", b64({ x402Version: 2, payload: "x", extensions: withId })],
    // What already got the refusal: the same answer for all of them.
    ["{}", b64({})],
    ["1", b64(1)],
    ['"x"', b64("x")],
    ["[]", b64([])],
  ];
  const routes: [string, string, string | undefined][] = [
    ["POST", "/api/skills/sha256", JSON.stringify({ text: "abc" })],
    ["POST", "/api/skills/slugify", JSON.stringify({ text: "abc" })],
    ["GET", "/api/partners/pricefeed/try/price", undefined],
    ["POST", "/api/partners/pricefeed/try/price", "{}"],
  ];
  const answer = async (
    method: string,
    path: string,
    body: string | undefined,
    header: string,
    e: object,
  ) => {
    const res = await send(
      path,
      { method, headers: { "content-type": "application/json", "payment-signature": header }, body },
      e,
    );
    const json = await res.json<{ reason?: string; accepts?: unknown[] }>();
    // The offer to sign again: in the body for v1 clients, in PAYMENT-REQUIRED for v2 clients.
    const required = res.headers.get("payment-required");
    return {
      status: res.status,
      reason: json.reason,
      offers: json.accepts?.length ?? 0,
      v2Offers: required ? decodePaymentRequiredHeader(required).accepts.length : 0,
    };
  };

  it.each(notPayments)(
    "payments on: %s → 402 invalid_payment_header with the offer",
    async (_name, header) => {
      for (const [method, path, body] of routes) {
        const where = `${method} ${path}`;
        expect(await answer(method, path, body, header, paidEnv), where).toEqual({
          status: 402,
          reason: "invalid_payment_header",
          offers: 1,
          v2Offers: 1,
        });
      }
    },
  );

  it.each(notPayments)(
    "free beta: %s is answered as {} is (a skill runs free, a try call is refused)",
    async (_name, header) => {
      for (const [method, path, body] of routes) {
        const where = `${method} ${path}`;
        const got = await answer(method, path, body, header, betaEnv);
        expect(got, where).toEqual(await answer(method, path, body, b64({}), betaEnv));
        expect(got.status, where).toBe(path.includes("/try/") ? 402 : 200);
      }
    },
  );

  it("over MCP: a _meta payment with an id and payload null is the same refusal, not an internal error", async () => {
    for (const payload of [null, undefined, "x"]) {
      const res = await send(
        "/mcp",
        mcpInit("tools/call", {
          name: "sha256",
          arguments: { text: "abc" },
          _meta: { "x402/payment": { x402Version: 2, payload, extensions: withId } },
        }),
        paidEnv,
      );
      expect(res.status).toBe(200);
      const answer = await res.json<{
        result: { isError: boolean; structuredContent: Record<string, unknown> };
      }>();
      expect(answer.result.isError, String(payload)).toBe(true);
      expect(answer.result.structuredContent, String(payload)).toMatchObject({
        x402Version: 2,
        reason: "invalid_payment_header",
      });
      expect(answer.result.structuredContent.accepts).toEqual([expect.objectContaining({ amount: "3000" })]);
    }
  });
});

describe("/admin forms", () => {
  const adminEnv = { ...env, ADMIN_TOKEN: "edges-t0ken-0123456789abcdefghij" };
  const same = { origin: ORIGIN };
  const signIn = async () => {
    const login = await send(
      "/admin/login",
      { method: "POST", headers: same, body: new URLSearchParams({ token: adminEnv.ADMIN_TOKEN }) },
      adminEnv,
    );
    expect(login.status).toBe(303);
    return (login.headers.get("set-cookie") ?? "").split(";")[0] as string;
  };
  // A multipart type without its boundary, or whose body is no multipart: the form has no fields.
  const notForms: [string, string][] = [
    ["multipart/form-data", "token=x"],
    ["multipart/form-data; boundary=zz", "token=x"],
    ["multipart/form-data; boundary=zz", "--zz\r\nnot a part"],
  ];

  it.each(notForms)(
    "a sign-in sent as %s (%j) is the login page with its error, not a 500",
    async (type, body) => {
      const res = await send(
        "/admin/login",
        { method: "POST", headers: { ...same, "content-type": type }, body },
        adminEnv,
      );
      expect(res.status).toBe(401);
      expect(res.headers.get("set-cookie")).toBeNull();
      expect(await res.text()).toContain("Wrong admin token.");
    },
  );

  it.each(notForms)(
    "a settle form sent as %s (%j) is refused with 403 Invalid CSRF token, not a 500",
    async (type, body) => {
      const cookie = await signIn();
      const res = await send(
        "/admin/payouts/pricefeed/settle",
        { method: "POST", headers: { ...same, cookie, "content-type": type }, body },
        adminEnv,
      );
      expect(res.status).toBe(403);
      expect(await res.json()).toEqual({ detail: "Invalid CSRF token" });
    },
  );
});

describe("/admin refusals are the app's JSON, and an unrouted method is a 405", () => {
  const adminEnv = { ...env, ADMIN_TOKEN: "edges-t0ken-0123456789abcdefghij" };
  const text = { "content-type": "text/plain" };
  const paths: [string, string][] = [
    ["/admin", "GET, HEAD"],
    ["/admin/login", "POST"],
    ["/admin/logout", "POST"],
    ["/admin/payouts/x/settle", "POST"],
  ];

  it.each(paths)(
    "%s: PUT, PATCH, DELETE and TRACE with a text body and no Origin → 405, Allow: %s",
    async (path, allow) => {
      for (const method of ["PUT", "PATCH", "DELETE", "TRACE"]) {
        const res = await send(path, { method, headers: text, body: "x" }, adminEnv);
        expect(res.status, `${method} ${path}`).toBe(405);
        expect(res.headers.get("allow"), `${method} ${path}`).toBe(allow);
        expect(await res.json(), `${method} ${path}`).toEqual({ detail: "Method Not Allowed" });
      }
    },
  );

  it("POST /admin (no such form) is a 405 too, Origin or not", async () => {
    for (const headers of [text, { ...text, origin: ORIGIN }]) {
      const res = await send("/admin", { method: "POST", headers, body: "x" }, adminEnv);
      expect(res.status).toBe(405);
      expect(res.headers.get("allow")).toBe("GET, HEAD");
      expect(await res.json()).toEqual({ detail: "Method Not Allowed" });
    }
  });

  it.each(paths.slice(1))("POST %s from no site or another site → 403 in JSON", async (path) => {
    for (const headers of [
      text,
      { ...text, origin: "https://evil.test" },
      { ...text, "sec-fetch-site": "cross-site" },
    ]) {
      const res = await send(path, { method: "POST", headers, body: "token=x" }, adminEnv);
      expect(res.status, JSON.stringify(headers)).toBe(403);
      expect(res.headers.get("content-type")).toContain("application/json");
      const body = await res.json<{ detail: string }>();
      expect(body.detail).toMatch(/this site's own/);
    }
  });

  it("the same-site form still passes the Origin check (Origin, or Sec-Fetch-Site: same-origin)", async () => {
    for (const headers of [{ origin: ORIGIN }, { "sec-fetch-site": "same-origin" }] as Record<
      string,
      string
    >[]) {
      const res = await send(
        "/admin/login",
        { method: "POST", headers, body: new URLSearchParams({ token: "wrong" }) },
        adminEnv,
      );
      expect(res.status).toBe(401);
      expect(await res.text()).toContain("Wrong admin token.");
    }
    // A JSON body is no form a page of another site can send (hono's check lets it through).
    const json = await send(
      "/admin/login",
      { method: "POST", headers: { "content-type": "application/json" }, body: '{"token":"x"}' },
      adminEnv,
    );
    expect(json.status).toBe(401);
  });
});

describe("a JSON body is read as UTF-8 strictly: bytes that are no UTF-8 are refused, never replaced", () => {
  const enc = new TextEncoder();
  const bytes = (...parts: (string | number[])[]) => {
    const chunks = parts.map((p) => (typeof p === "string" ? enc.encode(p) : new Uint8Array(p)));
    const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
    let at = 0;
    for (const c of chunks) {
      out.set(c, at);
      at += c.length;
    }
    return out;
  };
  const sha = (body: Uint8Array, path = "/api/skills/sha256") =>
    send(path, { method: "POST", headers: { "content-type": "application/json" }, body }, betaEnv);
  const hexOf = async (res: Response) => (await res.json<{ hex: string }>()).hex;
  const digest = async (data: Uint8Array) =>
    [...new Uint8Array(await crypto.subtle.digest("SHA-256", data))]
      .map((b) => b.toString(16).padStart(2, "0"))
      .join("");

  it.each([
    ["a lone 0xFF", [0xff], 9],
    ["a continuation byte alone", [0x80], 9],
    ["an overlong NUL (C0 80)", [0xc0, 0x80], 9],
    ["a UTF-16 surrogate (ED A0 80)", [0xed, 0xa0, 0x80], 9],
    ["past U+10FFFF (F4 90 80 80)", [0xf4, 0x90, 0x80, 0x80], 9],
    ["a character cut short (E2 82)", [0xe2, 0x82], 9],
  ] as const)("%s in a string → 422 json_invalid where it stands", async (_name, bad, offset) => {
    const res = await sha(bytes('{"text":"', [...bad], '"}'));
    expect(res.status).toBe(422);
    const [item, ...rest] = await detailOf(res);
    expect(rest).toEqual([]);
    expect(item).toMatchObject({
      loc: ["body", offset],
      msg: "JSON decode error",
      type: "json_invalid",
      input: {},
    });
    expect(String(item?.ctx?.error)).toMatch(/UTF-8/);
  });

  it("after multi-byte characters loc counts characters (as every json_invalid), ctx.error bytes; a cut character at the very end is refused too", async () => {
    const res = await sha(bytes('{"text":"é€', [0xff], '"}'));
    const [item] = await detailOf(res);
    expect(item?.loc).toEqual(["body", 11]);
    expect(item?.ctx?.error).toBe("invalid UTF-8: byte 0xff at byte offset 14 begins no character");
    const cut = await sha(bytes('{"text":"a"}', [0xf0, 0x9f]));
    expect((await detailOf(cut))[0]?.loc).toEqual(["body", 12]);
  });

  it("valid UTF-8 (2-, 3- and 4-byte characters) hashes the bytes sent; a leading BOM is still accepted", async () => {
    const text = "é€😀 and a real \uFFFD";
    const expected = await digest(enc.encode(text));
    expect(await hexOf(await sha(bytes(JSON.stringify({ text }))))).toBe(expected);
    const bom = await sha(bytes([0xef, 0xbb, 0xbf], JSON.stringify({ text })));
    expect(bom.status).toBe(200);
    expect(await hexOf(bom)).toBe(expected);
  });

  it("a call with an Idempotency-Key (its body fingerprinted first) is refused the same way, its credit kept", async () => {
    const key = await keyWith(env.DB, 3, "sha256");
    const res = await send(
      "/api/skills/sha256",
      {
        method: "POST",
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${key}`,
          "idempotency-key": "k-utf8-1",
        },
        body: bytes('{"text":"', [0xff], '"}'),
      },
      paidEnv,
    );
    expect(res.status).toBe(422);
    expect((await detailOf(res))[0]).toMatchObject({ loc: ["body", 9], type: "json_invalid" });
    expect(await callsLeft(env.DB, key)).toBe(3);
  });

  it("every route that validates a JSON body refuses it the same way (a declared operation too)", async () => {
    const slug = await sha(bytes('{"text":"', [0xff], '"}'), "/api/skills/slugify");
    expect((await detailOf(slug))[0]).toMatchObject({ loc: ["body", 9], type: "json_invalid" });
    const checkout = await sha(bytes('{"pack":"', [0xff], '"}'), "/api/cardpay/checkout");
    expect(checkout.status).toBe(422);
    expect((await detailOf(checkout))[0]).toMatchObject({ loc: ["body", 9], type: "json_invalid" });
  });

  it("/mcp refuses such a body as a JSON-RPC parse error", async () => {
    const res = await send(
      "/mcp",
      {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: bytes(
          '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sha256","arguments":{"text":"',
          [0xff],
          '"}}}',
        ),
      },
      betaEnv,
    );
    expect(res.status).toBe(400);
    const answer = await res.json<{ error: { code: number; message: string } }>();
    expect(answer.error.code).toBe(-32700);
    expect(answer.error.message).toMatch(/UTF-8/);
  });
});

describe("small mismatches with the reference shapes", () => {
  it.each([
    ["é", "ascii", `character "é" at index 0 is not valid ascii`],
    // The whole character (its high half alone, "\ud83d", was quoted).
    ["é😀", "latin1", `character "😀" at index 1 is not valid latin1`],
    ["😀é", "ascii", `character "😀" at index 0 is not valid ascii`],
    ["zz", "hex", "text is not valid hex (an even number of 0-9a-f digits)"],
  ])(
    "sha256 of %j as %s: msg says 'Value error, …', ctx.error the bare message (as pydantic)",
    async (text, encoding, message) => {
      const res = await send(
        "/api/skills/sha256",
        {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ text, encoding }),
        },
        betaEnv,
      );
      expect(res.status).toBe(422);
      expect(await detailOf(res)).toEqual([
        {
          loc: ["body", "text"],
          msg: `Value error, ${message}`,
          type: "value_error",
          input: text,
          ctx: { error: message },
        },
      ]);
    },
  );

  it("TRACE /mcp is a JSON-RPC 405, as GET, PUT, PATCH and DELETE are", async () => {
    for (const method of ["TRACE", "GET", "PUT", "PATCH", "DELETE"]) {
      const res = await send("/mcp", { method }, betaEnv);
      expect(res.status, method).toBe(405);
      expect(res.headers.get("allow"), method).toBe("POST");
      expect(await res.json(), method).toEqual({
        jsonrpc: "2.0",
        error: { code: -32000, message: "Method Not Allowed: this stateless MCP server takes POST only" },
        id: null,
      });
    }
  });
});

describe("/admin body cap", () => {
  it("a body over 8192 bytes is a JSON 413, with or without a declared length", async () => {
    const adminEnv = { ...env, ADMIN_TOKEN: "edges-t0ken-0123456789abcdefghij" };
    const big = "x".repeat(9000);
    const chunked = () =>
      new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode(big));
          controller.close();
        },
      });
    for (const path of ["/admin", "/admin/login", "/admin/payouts/x/settle"]) {
      for (const body of [big, chunked()]) {
        const res = await send(
          path,
          { method: "POST", headers: { origin: ORIGIN, "content-type": "text/plain" }, body },
          adminEnv,
        );
        expect(res.status, path).toBe(413);
        expect(await res.json(), path).toEqual({ detail: "Request body larger than 8192 bytes" });
      }
    }
  });
});
