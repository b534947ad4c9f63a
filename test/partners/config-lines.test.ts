import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { paidEnv } from "../helpers";

afterEach(() => vi.restoreAllMocks());

/** `paths` fetched in order with `bindings`; the answers, and the error lines written meanwhile. */
async function fetchAll(bindings: object, paths: string[], init?: RequestInit) {
  const errors = vi.spyOn(console, "error").mockImplementation(() => {});
  const app = createApp();
  const answers: Response[] = [];
  for (const path of paths)
    answers.push(await app.fetch(new Request(`https://skills.test${path}`, init), bindings));
  const lines = errors.mock.calls.map((c) => JSON.parse(String(c[0])));
  errors.mockRestore();
  return { answers, lines };
}

// Each test's configuration is its own (a random part), so the once-per-isolate line is its own.
const unique = () => crypto.randomUUID().replaceAll("-", "").slice(0, 8);

describe("a configuration every paid call or partner route refuses (503) is logged once per isolate", () => {
  it("PAY_TO that is not an address", async () => {
    const payTo = `0xabc${unique()}`;
    const post = { method: "POST", headers: { "content-type": "application/json" }, body: '{"text":"a"}' };
    const { answers, lines } = await fetchAll(
      { ...paidEnv(), PAY_TO: payTo },
      ["/api/skills/sha256", "/api/skills/sha256"],
      post,
    );
    for (const res of answers) expect(res.status).toBe(503);
    expect(lines).toEqual([
      {
        level: "error",
        msg: "x402 payments misconfigured",
        error: "PAY_TO is not an EVM address (0x + 11 hex digits; an address is 0x + 40 hex digits)",
      },
    ]);
  });

  it.each([
    [
      "PARTNER_BASE_URLS not JSON",
      { PARTNER_BASE_URLS: `{${unique()}` },
      "PARTNER_BASE_URLS is not valid JSON",
    ],
    [
      "PARTNER_PRICE_MULTIPLIER below 3",
      // A last digit of 5: "2.000" would be read as 2 and logged as "2" (one run in ~4,000 failed so).
      { PARTNER_PRICE_MULTIPLIER: `2.${unique().replace(/\D/g, "1").slice(0, 3)}5` },
      /^PARTNER_PRICE_MULTIPLIER 2\.\d+ is below the minimum of 3$/,
    ],
  ])("%s", async (_what, vars, error) => {
    const { answers, lines } = await fetchAll({ ...env, ...vars }, [
      "/api/partners",
      "/api/partners/pricefeed",
    ]);
    for (const res of answers) expect(res.status).toBe(503);
    expect(lines).toEqual([
      { level: "error", msg: "partner configuration invalid", error: expect.stringMatching(error) },
    ]);
  });
});

describe('PARTNERS_ENABLED = "false"', () => {
  it("refuses the partner routes with its own reason, said once at info (a choice, not an error)", async () => {
    const info = vi.spyOn(console, "log").mockImplementation(() => {});
    // A value of its own so the once-per-isolate line is this test's.
    const { answers, lines } = await fetchAll(
      { ...env, PARTNERS_ENABLED: "false", PARTNER_WALLETS: `{"${unique()}":"0x${"ab".repeat(20)}"}` },
      ["/api/partners", "/api/partners/pricefeed"],
    );
    for (const res of answers) {
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({
        detail: 'Hosted partners are turned off on this deployment (PARTNERS_ENABLED = "false")',
      });
    }
    expect(lines).toEqual([]);
    expect(info.mock.calls.map((c) => JSON.parse(String(c[0])))).toEqual([
      {
        level: "info",
        msg: "partners turned off",
        error: 'Hosted partners are turned off on this deployment (PARTNERS_ENABLED = "false")',
      },
    ]);
  });
});

describe("an invalid partner multiplier", () => {
  it("leaves the home page and /.well-known/x402 up with the partners left out", async () => {
    const bad = { ...env, PARTNER_PRICE_MULTIPLIER: "2" };
    const { answers } = await fetchAll(bad, ["/", "/.well-known/x402", "/api/partners"]);
    const [home, manifest, partners] = answers as [Response, Response, Response];
    expect(home.status).toBe(200);
    const page = await home.text();
    expect(page).toContain("/docs/sha256");
    expect(page).not.toContain("Hosted partners");
    expect(manifest.status).toBe(200);
    const { resources } = await manifest.json<{ resources: string[] }>();
    expect(resources).toContain("https://skills.test/api/skills/sha256");
    expect(resources.filter((r) => r.includes("/api/partners/"))).toEqual([]);
    expect(partners.status).toBe(503);
    // With a valid one both list the partners.
    const { answers: good } = await fetchAll(env, ["/", "/.well-known/x402"]);
    expect(await good[0]?.text()).toContain("Hosted partners");
    expect(
      (await good[1]?.json<{ resources: string[] }>())?.resources.some((r) => r.includes("/api/partners/")),
    ).toBe(true);
  });
});
