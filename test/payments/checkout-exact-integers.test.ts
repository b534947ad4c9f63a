import { describe, expect, it } from "vitest";
import { call } from "../helpers";
import { deliver, pay, sessionEvent, sessionRow } from "./checkout-helpers";

// The HTTP and MCP routes of json_sort and json_flatten keep integers past 2^53 as written; a
// first call bought by card goes through the checkout body, which must not round them first.
describe("a card checkout's first call answers json_sort as its route does: long integers and key order as written", () => {
  it("stored as written and answered as written", async () => {
    const text =
      '{"skill_id":"json_sort","payload":{"data":{"b":12345678901234567890,"a":-98765432109876543210,"10":1,"9":2}}}';
    const res = await call("/api/cardpay/checkout", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: text,
    });
    expect(res.status).toBe(200);
    const { session_id: id } = await res.json<{ session_id: string }>();
    const row = await sessionRow(id);
    expect(row?.payload).toContain('"b":12345678901234567890,"a":-98765432109876543210');
    await pay(id);
    expect((await deliver(await sessionEvent("checkout.session.completed", id))).status).toBe(200);
    let result = "";
    for (let i = 0; i < 200 && !result; i++) {
      result = ((await sessionRow(id))?.payload_result as string | null) ?? "";
      if (!result) await new Promise((r) => setTimeout(r, 100));
    }
    // Code point order, as over HTTP: "10" before "9", which a re-parse in JavaScript turns around.
    expect(result).toContain('"sorted":{"10":1,"9":2,"a":-98765432109876543210,"b":12345678901234567890}');
    // The success page shows the same answer, indented: digits and key order as computed.
    const page = await (await call(`/checkout/success?session_id=${encodeURIComponent(id)}`)).text();
    const shown = page.replaceAll("&quot;", '"');
    expect(shown).toContain(
      '"sorted": {\n    "10": 1,\n    "9": 2,\n    "a": -98765432109876543210,\n    "b": 12345678901234567890\n  }',
    );
  });
});
