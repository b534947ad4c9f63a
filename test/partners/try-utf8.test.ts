import { afterEach, describe, expect, it, vi } from "vitest";
import type { ErrorItem } from "../helpers";
import { paidCall, stubNetwork } from "./network";

// A partner call's body is read as UTF-8 strictly, as every other JSON body of the app
// (http/json-text.ts bodyText; test/http/edges.test.ts): bytes that are no UTF-8 are the 422 a
// JSON syntax error gets there, before the partner is called or the caller settled. They were read
// with Request.text(), which replaced each with U+FFFD: the partner got, and the caller paid for,
// other text than was sent.

afterEach(() => {
  vi.restoreAllMocks();
});

const enc = new TextEncoder();
/** `{"<field>":"` + the bytes + `", …rest}`: valid JSON around them. */
function withBytes(field: string, bad: number[], rest = "") {
  const head = enc.encode(`{"${field}":"`);
  const tail = enc.encode(`"${rest}}`);
  const out = new Uint8Array(head.length + bad.length + tail.length);
  out.set(head, 0);
  out.set(bad, head.length);
  out.set(tail, head.length + bad.length);
  return out;
}

const postBytes = (path: string, body: Uint8Array | string) =>
  paidCall(path, { method: "POST", headers: { "content-type": "application/json" }, body });

async function refusedBeforeAnything(res: Response, calls: { partnerCalls: unknown[]; settled: unknown[] }) {
  expect(res.status).toBe(422);
  const { detail } = await res.json<{ detail: ErrorItem[] }>();
  expect(detail).toHaveLength(1);
  expect(res.headers.get("payment-response")).toBeNull();
  expect(calls.partnerCalls).toHaveLength(0);
  expect(calls.settled).toHaveLength(0);
  return detail[0] as ErrorItem;
}

describe("a partner call's body that is no UTF-8 is a 422 json_invalid, as a JSON syntax error is", () => {
  it.each([
    ["a lone 0xFF", [0xff]],
    ["an overlong NUL (C0 80)", [0xc0, 0x80]],
    ["a character cut short (E2 82)", [0xe2, 0x82]],
  ])("try POST with %s: 422 at its byte offset, nothing sent or settled", async (_name, bad) => {
    const calls = stubNetwork(() => Response.json({ encoded: "x" }));
    const res = await postBytes("/api/partners/textkit/try/base64", withBytes("text", bad));
    const item = await refusedBeforeAnything(res, calls);
    expect(item).toMatchObject({
      loc: ["body", 9],
      msg: "JSON decode error",
      type: "json_invalid",
      input: {},
    });
    expect(String(item.ctx?.error)).toMatch(/UTF-8/);
  });

  it("whitespace alone is no JSON (json_invalid), JSON null is no body, and every out-of-range number is named", async () => {
    const blank = stubNetwork(() => Response.json({ encoded: "x" }));
    const item = await refusedBeforeAnything(await postBytes("/api/partners/textkit/try/base64", " "), blank);
    expect(item).toMatchObject({ loc: ["body", 1], type: "json_invalid" });
    const big = stubNetwork(() => Response.json({ encoded: "x" }));
    const res = await postBytes("/api/partners/textkit/try/base64", '{"a":1e400,"b":-1e999}');
    expect(res.status).toBe(422);
    expect((await res.json<{ detail: ErrorItem[] }>()).detail.map((i) => i.loc)).toEqual([
      ["body", "a"],
      ["body", "b"],
    ]);
    expect(big.settled).toHaveLength(0);
    stubNetwork(() => Response.json({ encoded: "x" }));
    expect((await postBytes("/api/partners/textkit/try/base64", "null")).status).not.toBe(422);
  });

  it("the same route's answer to a JSON syntax error, for comparison: the same 422 shape at the same point", async () => {
    const calls = stubNetwork(() => Response.json({ encoded: "x" }));
    const res = await postBytes("/api/partners/textkit/try/base64", '{"text":');
    const item = await refusedBeforeAnything(res, calls);
    expect(item).toMatchObject({ msg: "JSON decode error", type: "json_invalid", input: {} });
  });

  it("a refinery recipe's try route and the refinery skill: the same 422", async () => {
    const calls = stubNetwork(() => Response.json({ items: [] }));
    const body = withBytes("raw", [0xff], ',"request":"r"');
    const tried = await postBytes("/api/partners/refinery/try/eval_set", body);
    expect(await refusedBeforeAnything(tried, calls)).toMatchObject({
      loc: ["body", 8],
      type: "json_invalid",
    });
    const skill = await postBytes(
      "/api/skills/refinery-recipes",
      withBytes("raw", [0xff], ',"request":"r","recipe":"eval_set"'),
    );
    expect(await refusedBeforeAnything(skill, calls)).toMatchObject({
      loc: ["body", 8],
      type: "json_invalid",
    });
  });

  it("valid UTF-8 (and a real U+FFFD) still goes through and is charged", async () => {
    const { partnerCalls } = stubNetwork(() => Response.json({ encoded: "x" }));
    const text = "é€😀 \uFFFD";
    const res = await postBytes("/api/partners/textkit/try/base64", JSON.stringify({ text }));
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ charged: true });
    expect(await partnerCalls[0]?.req.json()).toEqual({ text });
  });
});
