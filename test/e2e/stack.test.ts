import { describe, expect, inject, it } from "vitest";

const stack = inject("stack");

describe("npm start", () => {
  it("writes .dev/stack.json with the base URL", () => {
    expect(stack.base_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it("serves the catalog of 15 skills with prices and docs URLs on the configured base", async () => {
    const res = await fetch(`${stack.base_url}/api/catalog`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      skills: { id: string; price_usd: number; docs_url: string }[];
      [flag: string]: unknown;
    };
    expect(body.skills).toHaveLength(15);
    expect(body).toMatchObject({
      x402_enabled: true,
      cardpay_enabled: true,
      free_beta: false,
      hosted_partners: [],
    });
    expect(body.skills.find((s) => s.id === "research")?.price_usd).toBe(0.015);
    for (const s of body.skills) expect(s.docs_url.startsWith(`${stack.base_url}/docs/`)).toBe(true);
  });

  it("has migrated D1 and reachable KV", async () => {
    const res = await fetch(`${stack.base_url}/health`);
    expect(await res.json()).toMatchObject({ status: "ok", version: "2.7.1" });
  });

  it("answers validation errors in the FastAPI shape over real HTTP", async () => {
    const res = await fetch(`${stack.base_url}/api/admin/payments?limit=0`, {
      headers: { authorization: `Bearer ${stack.admin_token}` },
    });
    expect(res.status).toBe(422);
    expect(await res.json()).toEqual({
      detail: [
        {
          loc: ["query", "limit"],
          msg: "Input should be greater than or equal to 1",
          type: "greater_than_equal",
          input: "0",
          ctx: { ge: 1 },
        },
      ],
    });
  });

  it("keeps maintainer endpoints behind the admin token", async () => {
    const res = await fetch(`${stack.base_url}/api/admin/payments`);
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ detail: "Missing bearer token" });
  });
});
