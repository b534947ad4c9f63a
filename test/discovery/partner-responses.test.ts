import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";

// The partner try and refinery operations list the 409 (idempotency conflict), 413 (body cap) and
// 429 (rate limited, Retry-After) their routes answer, as the skill operations do, in the same
// words: openapi.json listed only 200/402/404/422/502/503/504 for them.
const app = createApp();

type Responses = Record<string, { description: string }>;

async function document() {
  const res = await app.fetch(new Request("https://skills.test/openapi.json"), env);
  return res.json<{ paths: Record<string, Record<string, { responses: Responses }>> }>();
}

describe("partner operations document the answers every priced route gives", () => {
  it.each([
    ["/api/partners/{partner_id}/try/{service_id}", "get"],
    ["/api/partners/{partner_id}/try/{service_id}", "post"],
    ["/api/skills/refinery-recipes", "post"],
  ])("%s %s lists 409, 413 and 429 as a skill does", async (path, method) => {
    const doc = await document();
    const skill = doc.paths["/api/skills/sha256"]?.post?.responses as Responses;
    const op = doc.paths[path]?.[method]?.responses as Responses;
    for (const status of ["409", "413", "429"]) {
      expect(op[status], status).toBeDefined();
      expect(op[status]).toEqual(skill[status]);
    }
  });

  it("the refinery route does answer 413 past the body cap, as documented", async () => {
    const res = await app.fetch(
      new Request("https://skills.test/api/skills/refinery-recipes", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ recipe: "policy_digest", text: "x".repeat(5 * 1024 * 1024) }),
      }),
      env,
    );
    expect(res.status).toBe(413);
  });
});
