import { describe, expect, it } from "vitest";
import { call } from "./helpers";

describe("smoke", () => {
  it("health reports D1 and KV", async () => {
    const res = await call("/health");
    expect(res.status).toBe(200);
    const body = await res.json<{
      status: string;
      version: string;
      checks: Record<string, { ok: boolean }>;
    }>();
    expect(body).toMatchObject({
      status: "ok",
      version: "2.7.1",
      checks: { d1: { ok: true }, kv: { ok: true } },
    });
  });
});
