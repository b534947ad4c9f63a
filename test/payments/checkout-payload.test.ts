import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { detailOf, type ErrorItem, postJson } from "../helpers";
import {
  checkoutSeeingStripe,
  deliver,
  firstCallResult,
  keysFor,
  seedSession,
  sessionEvent,
} from "./checkout-helpers";

const _app = createApp();

describe("a first-call payload a skill reads as numbers: an integer past a double's range", () => {
  it("is the skill route's finite_number under body.payload, before Stripe is asked", async () => {
    const payload = `{"schema":{"type":"number","maximum":5},"instance":1${"0".repeat(309)}}`;
    const { res, sent } = await checkoutSeeingStripe(checkoutText("json_schema_validate", payload));
    expect(res.status).toBe(422);
    expect(await detailOf(res)).toEqual(await skillRouteItems("json_schema_validate", payload));
    expect(sent).toEqual([]);
  });
});

/** A checkout body written as text, so a payload may hold an integer past 2^53 as sent. */
const checkoutText = (skill: string, payload: string) => `{"skill_id":"${skill}","payload":${payload}}`;

/** The skill route's own 422 items for this body, as the checkout must give them under body.payload. */
async function skillRouteItems(skill: string, payload: string) {
  const res = await postJson(`/api/skills/${skill.replaceAll("_", "-")}`, payload);
  expect(res.status).toBe(422);
  return (await detailOf(res)).map((i: ErrorItem) => ({ ...i, loc: ["body", "payload", ...i.loc.slice(1)] }));
}

describe("a checkout's first-call payload is checked against the skill's schema before Stripe", () => {
  it.each([
    ["sha256", '{"text":5}', ["body", "payload", "text"], "string_type"],
    ["sha256", "{}", ["body", "payload", "text"], "missing"],
    ["sha256", '{"text":"a","encoding":"ebcdic"}', ["body", "payload", "encoding"], "literal_error"],
    // The skill reads the stored payload as its route reads a body: this integer is a number past
    // 32 there (too large), not the raw digits json_sort keeps (which would be "not an integer").
    ["uuid_mint", '{"count":12345678901234567890}', ["body", "payload", "count"], "less_than_equal"],
  ])(
    "%s %s: 422 on %j (%s), the skill route's items, and Stripe is not asked",
    async (skill, payload, loc, type) => {
      const { res, sent } = await checkoutSeeingStripe(checkoutText(skill, payload));
      expect(res.status).toBe(422);
      const items = await detailOf(res);
      expect(items[0]).toMatchObject({ loc, type });
      expect(items).toEqual(await skillRouteItems(skill, payload));
      expect(sent).toEqual([]);
    },
  );

  it.each([
    ["sha256", '{"text":"hello"}'],
    // json_sort keeps integers past 2^53 as written; its schema takes them.
    ["json_sort", '{"data":{"b":12345678901234567890,"a":1}}'],
    ["uuid_mint", '{"count":3}'],
  ])("%s %s: a payload the skill takes still creates the session", async (skill, payload) => {
    const { res, sent } = await checkoutSeeingStripe(checkoutText(skill, payload));
    expect(res.status).toBe(200);
    expect(sent).toEqual(["POST /v1/checkout/sessions"]);
    const { session_id } = await res.json<{ session_id: string }>();
    const row = await env.DB.prepare("SELECT payload FROM checkout_sessions WHERE id = ?1")
      .bind(session_id)
      .first<{ payload: string }>();
    expect(JSON.parse(row?.payload ?? "null")).toBeTruthy();
    if (skill === "json_sort") expect(row?.payload).toContain("12345678901234567890");
  });

  it("without a payload nothing is checked; an oversized payload is payload_too_large alone", async () => {
    expect((await postJson("/api/cardpay/checkout", { skill_id: "sha256" })).status).toBe(200);
    // Not a sha256 body either: the size bound answers first, and only it.
    const { res, sent } = await checkoutSeeingStripe(
      JSON.stringify({ skill_id: "sha256", payload: { text: 5, data: "x".repeat(1024 * 1024) } }),
    );
    expect(res.status).toBe(422);
    expect((await detailOf(res)).map((i) => [i.loc, i.type])).toEqual([
      [["body", "payload"], "payload_too_large"],
    ]);
    expect(sent).toEqual([]);
  });

  it("an unknown skill with a payload is still the 404", async () => {
    const res = await postJson("/api/cardpay/checkout", { skill_id: "nope", payload: { text: 5 } });
    expect(res.status).toBe(404);
  });

  it("a payload the schema takes but the skill's code refuses still runs once paid: a 422 first answer, no credit spent", async () => {
    // The check is the schema only, the skill is never run before payment: ascii cannot hold "é",
    // which sha256 finds while encoding the text.
    const id = await seedSession("sha256", 170, { text: "é", encoding: "ascii" });
    expect((await deliver(await sessionEvent("checkout.session.completed", id))).status).toBe(200);
    const result = await firstCallResult(id);
    expect(result).toMatchObject({ status: 422, body: { detail: [{ loc: ["body", "text"] }] } });
    expect((await keysFor(id)).results).toEqual([{ calls_left: 170, calls_total: 170 }]);
  });
});

describe("a first-call payload as deep as the skill's route takes", () => {
  // The payload sits one level down in the checkout's body: the body's bound was the skill's own,
  // so a payload the route answers was refused here as json_invalid at ["body"].
  const nested = (levels: number) => `{"data":${"[".repeat(levels)}${"]".repeat(levels)}}`;

  it("a json_sort body 200 levels deep: answered by the route, sold by the checkout", async () => {
    const route = await postJson("/api/skills/json-sort", JSON.parse(nested(199)));
    expect(route.status).toBe(200);
    const { res } = await checkoutSeeingStripe(checkoutText("json_sort", nested(199)));
    expect(res.status).toBe(200);
  });

  it("one level deeper: refused by both, and Stripe is not asked", async () => {
    expect((await postJson("/api/skills/json-sort", JSON.parse(nested(200)))).status).toBe(422);
    const { res, sent } = await checkoutSeeingStripe(checkoutText("json_sort", nested(200)));
    expect(res.status).toBe(422);
    expect((await detailOf(res))[0]).toMatchObject({ type: "json_invalid" });
    expect(sent).toEqual([]);
  });
});
