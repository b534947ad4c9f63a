import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { ADMIN_TOKEN_MIN_LENGTH } from "../../src/config";

afterEach(() => vi.restoreAllMocks());

describe("an ADMIN_TOKEN too short to resist guessing", () => {
  it("closes /api/admin/* and /admin (503 saying why), logged once per isolate, never the token", async () => {
    // Unique to this test, so the once-per-isolate line is this test's.
    const short = crypto.randomUUID().slice(0, ADMIN_TOKEN_MIN_LENGTH - 1);
    const e = { ...env, ADMIN_TOKEN: short };
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const app = createApp();
    const auth = { authorization: `Bearer ${short}` };
    for (let i = 0; i < 2; i++) {
      const res = await app.fetch(
        new Request("https://skills.test/api/admin/payments", { headers: auth }),
        e,
      );
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({
        detail: `Admin endpoints are disabled: ADMIN_TOKEN is shorter than ${ADMIN_TOKEN_MIN_LENGTH} characters: set a longer one (e.g. openssl rand -base64 32).`,
      });
    }
    const page = await app.fetch(
      new Request("https://skills.test/admin/login", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", origin: "https://skills.test" },
        body: new URLSearchParams({ token: short }).toString(),
      }),
      e,
    );
    expect(page.status).toBe(503);
    const lines = errors.mock.calls.map((c) => String(c[0])).filter((l) => l.includes("admin token refused"));
    expect(lines.map((l) => JSON.parse(l))).toEqual([
      {
        level: "error",
        msg: "admin token refused",
        error: expect.stringMatching(/^ADMIN_TOKEN is shorter than 24/),
      },
    ]);
    expect(errors.mock.calls.join("\n")).not.toContain(short);
  });

  it.each([5, true])(
    "an ADMIN_TOKEN set as JSON (%j) is not text: 503 saying so, not a 401",
    async (token) => {
      vi.spyOn(console, "error").mockImplementation(() => {});
      const res = await createApp().fetch(
        new Request("https://skills.test/api/admin/payments", {
          headers: { authorization: `Bearer ${token}` },
        }),
        { ...env, ADMIN_TOKEN: token },
      );
      expect(res.status).toBe(503);
      expect((await res.json<{ detail: string }>()).detail).toContain("ADMIN_TOKEN is not text");
    },
  );

  it.each([
    ["an array (bearerAuth took any element)", ["a", ...Array(23).fill("q7")], "a", "q7"],
    [
      "a long number (25 characters of text)",
      -0.0000012345678901234567,
      "-0.0000012345678901234567",
      "12345",
    ],
  ])("an ADMIN_TOKEN that is %s is refused: 503 not text, never quoted", async (_, token, bearer, part) => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const res = await createApp().fetch(
      new Request("https://skills.test/api/admin/payments", {
        headers: { authorization: `Bearer ${bearer}` },
      }),
      { ...env, ADMIN_TOKEN: token },
    );
    expect(res.status).toBe(503);
    const { detail } = await res.json<{ detail: string }>();
    expect(detail).toBe(
      "Admin endpoints are disabled: ADMIN_TOKEN is not text: set it as a string secret (wrangler secret put ADMIN_TOKEN).",
    );
    expect(errors.mock.calls.join("\n")).not.toContain(part);
  });

  it("a token of the minimum length opens them", async () => {
    const token = "a".repeat(ADMIN_TOKEN_MIN_LENGTH);
    const res = await createApp().fetch(
      new Request("https://skills.test/api/admin/payments", {
        headers: { authorization: `Bearer ${token}` },
      }),
      { ...env, ADMIN_TOKEN: token },
    );
    expect(res.status).toBe(200);
  });
});
