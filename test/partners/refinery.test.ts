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
