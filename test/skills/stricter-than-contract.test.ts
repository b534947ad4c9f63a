import { describe, expect, it } from "vitest";
import { skills } from "../../src/skills/registry";
import { call, detailOf, postJson } from "../helpers";

/**
 * README "Where this service is stricter than the contract": each deliberate choice a client that
 * follows interface 2.7.1 may meet, held to what the section says.
 */
const firstItem = async (path: string, body: unknown) => {
  const res = await postJson(path, body);
  expect(res.status, JSON.stringify(body)).toBe(422);
  return (await detailOf(res))[0];
};

describe("where this service is stricter than the contract", () => {
  it("text_diff's free-form options: a listed key (mode) is validated, other keys are ignored", async () => {
    expect(
      await firstItem("/api/skills/text-diff", { a: "x", b: "y", options: { mode: "sentence" } }),
    ).toMatchObject({
      loc: ["body", "options", "mode"],
      type: "literal_error",
    });
    const ok = await postJson("/api/skills/text-diff", {
      a: "x",
      b: "y",
      options: { mode: "word", other: 1 },
    });
    expect(ok.status).toBe(200);
  });

  it("url_normalize's options are free-form, as the contract says: nothing in them is refused", async () => {
    const res = await postJson("/api/skills/url-normalize", {
      url: "example.com",
      options: { anything: [1] },
    });
    expect(res.status).toBe(200);
  });

  it("sha256 and token_count take only the encodings they can apply (the contract bounds only the length)", async () => {
    expect(await firstItem("/api/skills/sha256", { text: "a", encoding: "ebcdic" })).toMatchObject({
      loc: ["body", "encoding"],
      type: "literal_error",
    });
    expect(await firstItem("/api/skills/token-count", { text: "a", encoding: "p50k_base" })).toMatchObject({
      loc: ["body", "encoding"],
      type: "literal_error",
    });
  });

  it("ai_detector's {} is a 422: one of text and url is needed", async () => {
    expect(await firstItem("/api/skills/ai-detector", {})).toMatchObject({
      loc: ["body"],
      msg: expect.stringContaining("either text or url is required"),
    });
  });

  it("json_schema_validate: a pattern RE2 cannot run is a 422, a pattern JavaScript rejects is a 200 checked:false", async () => {
    expect(
      await firstItem("/api/skills/json-schema-validate", { schema: { pattern: "(?=a)b" }, instance: "b" }),
    ).toMatchObject({ type: "pattern_unsupported", loc: ["body", "schema", "pattern"] });
    const invalid = await postJson("/api/skills/json-schema-validate", {
      schema: { pattern: "(" },
      instance: "b",
    });
    expect(invalid.status).toBe(200);
    expect(await invalid.json()).toMatchObject({ valid: false, checked: false });
  });

  it("the card checkout's payload is checked against the skill's input before Stripe", async () => {
    expect(
      await firstItem("/api/cardpay/checkout", { skill_id: "sha256", payload: { text: 5 } }),
    ).toMatchObject({
      loc: ["body", "payload", "text"],
      type: "string_type",
    });
  });

  it("the checkout pages' query values are at most 255 characters", async () => {
    expect((await call(`/checkout/cancel?skill_id=${"a".repeat(256)}`)).status).toBe(422);
    expect((await call(`/checkout/cancel?skill_id=${"a".repeat(255)}`)).status).toBe(200);
    expect((await call(`/checkout/success?session_id=${"a".repeat(256)}`)).status).toBe(422);
  });

  it("openapi.json annotates all 15 skills with x-x402", async () => {
    const doc = await (await call("/openapi.json")).json<{ paths: Record<string, { post?: object }> }>();
    const annotated = skills.filter((s) => "x-x402" in (doc.paths[s.endpoint]?.post ?? {}));
    expect(annotated).toHaveLength(15);
  });
});
