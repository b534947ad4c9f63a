import { afterEach, describe, expect, it, vi } from "vitest";
import type { ErrorItem } from "../helpers";
import { paidCall, stubNetwork } from "./network";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("refinery native skill: body validation (FastAPI shape)", () => {
  const post = (body: unknown) =>
    paidCall("/api/skills/refinery-recipes", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  it("an unknown recipe is a 422 literal_error and nothing settles", async () => {
    const { partnerCalls, settled } = stubNetwork(() => Response.json({}));
    const res = await post({ raw: "text", request: "what", recipe: "nope" });
    expect(res.status).toBe(422);
    expect((await res.json<{ detail: ErrorItem[] }>()).detail).toEqual([
      {
        loc: ["body", "recipe"],
        msg: "Input should be 'eval_set', 'rag_chunks', 'policy_digest' or 'custom'",
        type: "literal_error",
        input: "nope",
        ctx: { expected: "'eval_set', 'rag_chunks', 'policy_digest' or 'custom'" },
      },
    ]);
    expect(partnerCalls).toHaveLength(0);
    expect(settled).toHaveLength(0);
  });

  it.each(["raw", "request"])("a missing %s is a 422 missing", async (field) => {
    stubNetwork(() => Response.json({}));
    const body: Record<string, string> = { raw: "text", request: "what", recipe: "eval_set" };
    delete body[field];
    const res = await post(body);
    expect(res.status).toBe(422);
    expect((await res.json<{ detail: ErrorItem[] }>()).detail).toEqual([
      { loc: ["body", field], msg: "Field required", type: "missing", input: body },
    ]);
  });
});

describe("refinery try route: the body's recipe is the path's recipe (spec 2.8)", () => {
  const post = (service: string, body: unknown) =>
    paidCall(`/api/partners/refinery/try/${service}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  it("another recipe in the body is a 422 literal_error, never settled nor sent", async () => {
    const { partnerCalls, settled } = stubNetwork(() => Response.json({ items: [] }));
    const body = { raw: "text", request: "r", recipe: "policy_digest" };
    const res = await post("eval_set", body);
    expect(res.status).toBe(422);
    expect((await res.json<{ detail: ErrorItem[] }>()).detail).toEqual([
      {
        loc: ["body", "recipe"],
        msg: "Input should be 'eval_set'",
        type: "literal_error",
        input: "policy_digest",
        ctx: { expected: "'eval_set'" },
      },
    ]);
    expect(res.headers.get("payment-response")).toBeNull();
    expect(partnerCalls).toHaveLength(0);
    expect(settled).toHaveLength(0);
  });

  it.each([
    ["the same recipe", { raw: "text", request: "r", recipe: "eval_set" }],
    ["no recipe", { raw: "text", request: "r" }],
  ])("%s in the body is sent on as written and charged", async (_name, body) => {
    const { partnerCalls } = stubNetwork(() => Response.json({ items: [] }));
    const res = await post("eval_set", body);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ charged: true, price_usd: 0.06 });
    expect(await partnerCalls[0]?.req.json()).toEqual(body);
  });
});
