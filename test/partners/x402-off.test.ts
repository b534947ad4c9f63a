import { describe, expect, it } from "vitest";
import { postJson } from "../helpers";
import { send, stubNetwork, tryEnv } from "./network";

// Partner try routes and refinery recipes take x402 only (no card-credit step is mounted on them,
// and checkout sells no key for them): with x402 off, the 402 says so.

const off = { ...tryEnv, X402_ENABLED: "false" };

describe("x402 off: a paid partner route's 402 says it is sold by x402 only", () => {
  it.each([
    ["GET", "/api/partners/pricefeed/try/price"],
    ["POST", "/api/partners/textkit/try/json-sort"],
    ["POST", "/api/skills/refinery-recipes"],
  ] as const)(
    "%s %s: 402 detail names x402 as the only way to pay, card credits as none",
    async (method, path) => {
      const { partnerCalls } = stubNetwork(() => Response.json({}));
      const res = await send(
        path,
        method === "POST"
          ? {
              method,
              headers: { "content-type": "application/json", authorization: "Bearer mk_test" },
              body: JSON.stringify({ raw: "a", request: "b", recipe: "custom" }),
            }
          : { method },
        off,
      );
      expect(res.status).toBe(402);
      const body = await res.json<Record<string, unknown>>();
      // The shape is unchanged: one `detail` text, no offer (nothing can pay here now).
      expect(Object.keys(body)).toEqual(["detail"]);
      expect(body.detail).toMatch(/^Payment required: /);
      expect(body.detail).toMatch(/sold by x402 only/);
      expect(body.detail).toMatch(/x402 payments are off/);
      expect(body.detail).toMatch(/card credits cannot pay for them/);
      expect(res.headers.get("payment-required")).toBeNull();
      expect(partnerCalls).toHaveLength(0);
    },
  );

  it("a free partner service is still served with x402 off", async () => {
    stubNetwork(() => Response.json({ tools: [] }));
    expect((await send("/api/partners/pricefeed/try/mcp_tools", {}, off)).status).toBe(200);
    // and a skill in free beta (the unit tests' default) is untouched
    expect((await postJson("/api/skills/sha256", { text: "a" })).status).toBe(200);
  });
});
