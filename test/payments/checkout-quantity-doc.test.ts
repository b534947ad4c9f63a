import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { packSize } from "../../src/payments/credits";

// The checkout's `quantity` says both rules that raise it: the $0.50 card minimum and a whole
// number of cents in total (its description named only the first, and 171 calls at $0.003 are
// sold as 180, $0.54).
describe("the checkout quantity's description names the whole-cents rule", () => {
  it("openapi.json says it, with an example packSize agrees with", async () => {
    const res = await createApp().fetch(new Request("https://skills.test/openapi.json"), env);
    const doc = await res.json<{
      paths: Record<string, { post: { requestBody: { content: Record<string, { schema: unknown }> } } }>;
      components: { schemas: Record<string, { properties?: Record<string, { description?: string }> }> };
    }>();
    let schema = doc.paths["/api/cardpay/checkout"]?.post.requestBody.content["application/json"]?.schema as {
      $ref?: string;
      properties?: Record<string, { description?: string }>;
    };
    if (schema.$ref) schema = doc.components.schemas[schema.$ref.split("/").pop() as string] as typeof schema;
    const description = schema.properties?.quantity?.description ?? "";
    expect(description).toMatch(/\$0\.50 card minimum/);
    expect(description).toMatch(/whole number of cents/);
    expect(description).toContain("171 → 180 calls for $0.54");
    expect(packSize(3_000n, 171)).toBe(180);
  });
});
