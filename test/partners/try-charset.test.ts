import { afterEach, describe, expect, it, vi } from "vitest";
import { paidCall, payoutRows, receipt, send, stubNetwork, x402Partner } from "./network";

// A partner's answer is read in the charset it declares. It was read as UTF-8 whatever it said:
// ISO-8859-1's "café" came back as "caf\ufffd", a UTF-16 JSON answer as "\ufffd\ufffd{\u0000…",
// and the caller was charged for either. An answer that cannot be read is the partner's failure.

afterEach(() => {
  vi.restoreAllMocks();
});

const enc = new TextEncoder();
const CAFE_LATIN1 = [0x63, 0x61, 0x66, 0xe9];
const bytesOf = (...parts: (string | number[])[]) =>
  new Uint8Array(parts.flatMap((p) => (typeof p === "string" ? [...enc.encode(p)] : p)));
/** `text` in UTF-16 (little or big endian), behind its byte order mark. */
const utf16 = (text: string, little: boolean) => [
  ...(little ? [0xff, 0xfe] : [0xfe, 0xff]),
  ...[...text].flatMap((ch) => {
    const u = ch.charCodeAt(0);
    return little ? [u & 0xff, u >> 8] : [u >> 8, u & 0xff];
  }),
];
const answer = (bytes: Uint8Array | number[], contentType: string) => () =>
  new Response(bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes), {
    headers: { "content-type": contentType },
  });

const redact = () =>
  paidCall("/api/partners/textkit/try/pii-redactor", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: '{"text":"x"}',
  });

describe("a partner's answer is decoded by its declared charset", () => {
  it.each([
    ["text/plain; charset=iso-8859-1", CAFE_LATIN1, "café"],
    ['text/plain; charset="windows-1252"', [...CAFE_LATIN1, 0x80], "café€"],
    ["text/plain; charset=utf-8", [...enc.encode("café 😀")], "café 😀"],
    ["text/plain", [...enc.encode("café")], "café"],
    // A label with no encoding is no declaration: UTF-8, strictly (they were a 502).
    ["text/plain; charset=", [...enc.encode("café")], "café"],
    ["text/plain; charset=utf8mb4", [...enc.encode("café 😀")], "café 😀"],
    ["text/plain; charset=binary", [...enc.encode("café")], "café"],
    ["text/plain; charset=unicode-1-1-utf-8x", [...enc.encode("café")], "café"],
    ["text/plain; charset=iso-2022-kr", [...enc.encode("café")], "café"],
  ])("%s: relayed as the partner wrote it, charged", async (type, bytes, text) => {
    stubNetwork(answer(bytes, type));
    const res = await redact();
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ charged: true, upstream_status: 200, body: text });
  });

  it.each([
    ["application/json; charset=iso-8859-1", bytesOf('{"t":"caf', [0xe9], '"}')],
    ["application/json; charset=utf-16", utf16('{"t":"café"}', true)],
    // A byte order mark names the encoding whatever the header says, as browsers read it.
    ["application/json", utf16('{"t":"café"}', false)],
    ["application/json; charset=iso-8859-1", bytesOf([0xef, 0xbb, 0xbf], '{"t":"café"}')],
  ])("JSON in %s: relayed as JSON", async (type, bytes) => {
    stubNetwork(answer(bytes, type));
    const res = await redact();
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ charged: true, body: { t: "café" } });
  });
});

describe("an answer that cannot be read is the partner's failure: 502, not charged, nothing owed", () => {
  it.each([
    [
      "a charset nobody knows, not UTF-8",
      "text/plain; charset=klingon",
      CAFE_LATIN1,
      /utf-8 \(charset "klingon"/,
    ],
    [
      "a replacement label, not UTF-8",
      "text/plain; charset=iso-2022-kr",
      CAFE_LATIN1,
      /utf-8 \(charset "iso-2022-kr"/,
    ],
    ["an empty charset, not UTF-8", "text/plain; charset=", CAFE_LATIN1, /not valid utf-8/],
    ["bytes that are no UTF-8 (declared)", "text/plain; charset=utf-8", CAFE_LATIN1, /not valid utf-8/],
    [
      "bytes that are no UTF-8 (nothing declared)",
      "application/json",
      bytesOf('{"t":"caf', [0xe9], '"}'),
      /utf-8/,
    ],
    ["an odd number of UTF-16 bytes", "application/json; charset=utf-16", [0xff, 0xfe, 0x7b], /utf-16le/],
  ])("%s", async (_name, type, bytes, why) => {
    const { settled } = stubNetwork(answer(bytes, type));
    const res = await redact();
    expect(res.status).toBe(502);
    const body = await res.json<{ detail: string }>();
    expect(body).toMatchObject({ charged: false, upstream_status: 200 });
    expect(body.detail).toMatch(why);
    expect(settled).toHaveLength(0);
    expect(await payoutRows(res.headers.get("x-request-id"))).toEqual([]);
  });

  it("a partner we paid ourselves: the caller is refunded the price less the partner's authorization", async () => {
    stubNetwork(x402Partner("10000", () => answer(CAFE_LATIN1, "application/json; charset=utf-8")()));
    const res = await paidCall("/api/partners/pricefeed/try/price");
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({
      charged: true,
      refund: { status: "refunded", amount_usd: 0.02 },
    });
    expect(await payoutRows(res.headers.get("x-request-id"))).toEqual([]);
  });

  it("the same partner answering readable Latin-1: served and paid (for comparison)", async () => {
    stubNetwork(
      x402Partner("10000", () => {
        const ok = answer(bytesOf('{"t":"caf', [0xe9], '"}'), "application/json; charset=latin1")();
        for (const [k, v] of Object.entries(receipt("10000"))) ok.headers.set(k, v);
        return ok;
      }),
    );
    const res = await paidCall("/api/partners/pricefeed/try/price");
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ charged: true, paid_upstream: true, body: { t: "café" } });
    expect(await payoutRows(res.headers.get("x-request-id"))).toHaveLength(1);
  });
});

describe("an answer we only look into does not fail the call by its body", () => {
  const LATIN1_HTML = bytesOf("<p>Pay", [0xe9], "</p>");

  it("an unpaid 402 whose body does not decode: paid from its PAYMENT-REQUIRED header", async () => {
    const partner = x402Partner("10000", () => {
      const ok = Response.json({ price: 1 });
      for (const [k, v] of Object.entries(receipt("10000"))) ok.headers.set(k, v);
      return ok;
    });
    stubNetwork((req: Request) => {
      const res = partner(req);
      if (res.status !== 402) return res;
      const headers = new Headers(res.headers);
      headers.set("content-type", "text/html");
      return new Response(LATIN1_HTML, { status: 402, headers });
    });
    const res = await paidCall("/api/partners/pricefeed/try/price");
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ charged: true, paid_upstream: true, body: { price: 1 } });
    expect(await payoutRows(res.headers.get("x-request-id"))).toHaveLength(1);
  });

  it("the external partner's 403 whose body does not decode: still reported, with no body", async () => {
    stubNetwork(() => new Response(LATIN1_HTML, { status: 403, headers: { "content-type": "text/html" } }));
    const res = await send("/api/partners/notifyhook/try/notify", { method: "POST" });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ upstream_status: 403, charged: false, body: null });
  });
});
