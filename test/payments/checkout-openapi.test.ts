import { describe, expect, it } from "vitest";
import { call, detailOf, postJson } from "../helpers";

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  schema: { type: string; pattern: string };
}
interface Op {
  parameters?: Parameter[];
  responses: Record<string, unknown>;
}

const operationOf = async (path: string) => {
  const doc = JSON.parse(await (await call("/openapi.json")).text());
  return doc.paths[path].post as Op;
};

describe("the card checkout's OpenAPI operations declare every answer their routes give", () => {
  it("POST /api/cardpay/checkout: the Idempotency-Key header, 409, 429 and 502", async () => {
    const op = await operationOf("/api/cardpay/checkout");
    // 409: the key reused with another body; 429: the free "checkout" quota; 502: Stripe failed.
    expect(Object.keys(op.responses).sort()).toEqual(["200", "404", "409", "422", "429", "502", "503"]);
    const headers = (op.parameters ?? []).filter((p) => p.in === "header");
    expect(headers.map((p) => [p.name, p.required])).toEqual([["Idempotency-Key", false]]);
  });

  it("the header's documented pattern is the one the route enforces", async () => {
    const op = await operationOf("/api/cardpay/checkout");
    const header = op.parameters?.find((p) => p.name === "Idempotency-Key");
    const pattern = new RegExp(header?.schema.pattern ?? "(?!)");
    const good = crypto.randomUUID();
    expect(pattern.test(good)).toBe(true);
    const body = { skill_id: "sha256" };
    expect((await postJson("/api/cardpay/checkout", body, { "idempotency-key": good })).status).toBe(200);
    // What the document refuses, the route refuses with a 422 on the header.
    for (const bad of ["x".repeat(256), "two words", "del\u007f"]) {
      expect(pattern.test(bad), bad).toBe(false);
      const res = await postJson("/api/cardpay/checkout", body, { "idempotency-key": bad });
      expect(res.status, bad).toBe(422);
      expect((await detailOf(res))[0]?.loc, bad).toEqual(["header", "idempotency-key"]);
    }
  });

  it("POST /api/cardpay/webhook: 502 when Stripe cannot be read", async () => {
    const op = await operationOf("/api/cardpay/webhook");
    expect(Object.keys(op.responses).sort()).toEqual(["200", "400", "502", "503"]);
  });
});
