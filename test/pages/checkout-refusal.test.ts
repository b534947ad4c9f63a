import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { call } from "../helpers";

/**
 * The module runs here as it is (it touches the DOM only when a button is wired), but it is typed
 * against the DOM, which this project's types leave out (tsconfig.json excludes src/browser): a
 * specifier that is no string literal keeps it out of this type check, and these are its types.
 */
const CHECKOUT: string = "../../src/browser/checkout";
const { refusal, startCheckout } = (await import(CHECKOUT)) as {
  refusal(status: number, detail: unknown): string;
  startCheckout(skillId: string, payloadText?: string): Promise<string>;
};

// What the pages' buy buttons (src/browser/checkout.ts) show when a checkout is refused. The real
// browser runs them in test/e2e; here startCheckout's relative fetch is answered by the Worker.

afterEach(() => {
  vi.restoreAllMocks();
});

/** startCheckout as a page runs it, its `/api/...` request sent to the Worker under test. */
async function checkoutFromPage(skillId: string, payloadText?: string) {
  const real = globalThis.fetch;
  // Only the page's own relative request; the Worker's requests (Stripe's) go out as they are.
  vi.spyOn(globalThis, "fetch").mockImplementation((input, init) =>
    typeof input === "string" && input.startsWith("/") ? call(input, init) : real(input, init),
  );
  return startCheckout(skillId, payloadText).then(
    (url) => ({ url }),
    (e: Error) => ({ error: e.message }),
  );
}

describe("a refused checkout says why", () => {
  it("a first-call payload the skill's schema refuses (a 422 list, before Stripe): its field and message", async () => {
    expect(await checkoutFromPage("sha256", '{"text": 5}')).toEqual({
      error: "Checkout could not start: payload.text: Input should be a valid string",
    });
    expect(await checkoutFromPage("sha256", "{}")).toEqual({
      error: "Checkout could not start: payload.text: Field required",
    });
  });

  it("a payload the skill takes opens Stripe's page", async () => {
    const started = await checkoutFromPage("sha256", '{"text": "hello"}');
    expect(started).toEqual({ url: expect.stringMatching(/^https?:\/\//) });
  });

  it("the payload goes as typed: the checkout stores json_sort's long integers as written", async () => {
    const typed = '{"data": {"b": 12345678901234567890, "a": [-98765432109876543210, 1.50]}}';
    const started = await checkoutFromPage("json_sort", typed);
    // The emulator's hosted page is /pay/<session id>.
    const id = /\/pay\/([^/?#]+)$/.exec("url" in started ? started.url : "")?.[1];
    const row = await env.DB.prepare("SELECT payload FROM checkout_sessions WHERE id = ?1")
      .bind(id ?? "")
      .first<{ payload: string }>();
    // Integers as written; other numbers as doubles in their shortest form (http/exact-integers.ts).
    expect(row?.payload).toBe('{"data":{"b":12345678901234567890,"a":[-98765432109876543210,1.5]}}');
  });

  it("the first item of a list, its loc joined without the leading body; a string detail as it is; else the status", () => {
    const items = [
      { loc: ["body", "payload", "items", 0, "id"], msg: "Field required", type: "missing" },
      { loc: ["body", "skill_id"], msg: "second", type: "x" },
    ];
    expect(refusal(422, items)).toBe("payload.items.0.id: Field required");
    expect(refusal(422, [{ loc: ["body"], msg: "Field required" }])).toBe("Field required");
    expect(refusal(422, [{ loc: ["query", "n"], msg: "bad" }])).toBe("query.n: bad");
    expect(refusal(429, "Too many checkouts; retry later.")).toBe("Too many checkouts; retry later.");
    expect(refusal(500, undefined)).toBe("HTTP 500");
    expect(refusal(422, [])).toBe("HTTP 422");
    expect(refusal(422, [null])).toBe("HTTP 422");
    expect(refusal(422, [{ loc: ["body"] }])).toBe("HTTP 422");
  });
});
