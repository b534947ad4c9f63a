import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import { describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { skills } from "../../src/skills/registry";
import { forgetPublishedStats, STATS_KV_KEY } from "../../src/stats/published";
import { dashboardFigures, percentile, skillStats } from "../../src/stats/query";
import { type CallRecord, classify, queueCall, writeCall } from "../../src/stats/record";
import { unsignedPayment } from "../fixtures/payments";
import { FIXTURE } from "../fixtures/upstream-requests";
import { mcpInit } from "../helpers";

const app = createApp();
const DAY = 86_400_000;
// Seeded rows live in a future week so the figures are exact whatever other test files logged now.
const NOW = Date.UTC(2031, 0, 15, 12, 0, 0);

const rec = (over: Partial<CallRecord>): CallRecord => ({
  at: NOW - 1000,
  skill: "research",
  status: 200,
  outcome: "ok",
  durationMs: 10,
  paymentMethod: "x402_v2",
  amountMicro: 50_000,
  transport: "http",
  ...over,
});

async function fetchApp(path: string, init?: RequestInit, e: object = env) {
  const ctx = createExecutionContext();
  const res = await app.fetch(new Request(`https://skills.test${path}`, init), e, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

/** Signs in to /admin as the login form does; the dashboard cookie is in the answer's set-cookie. */
const adminLogin = (token: string, e: object) =>
  fetchApp(
    "/admin/login",
    {
      method: "POST",
      body: new URLSearchParams({ token }),
      headers: { origin: "https://skills.test" },
      redirect: "manual",
    },
    e,
  );
const sessionCookie = (login: Response) => (login.headers.get("set-cookie") ?? "").split(";")[0] as string;

describe("outcome classes", () => {
  it.each([
    [200, "", "ok"],
    [422, "", "validation"],
    [402, "", "payment_required"],
    [401, "", "key_refused"],
    [403, "", "key_refused"],
    [429, "", "rate_limited"],
    [409, "", "conflict"],
    [502, '{"detail":"upstream"}', "upstream"],
    [504, "", "upstream"],
    [502, '{"reason":"settlement_unconfirmed"}', "settlement_unconfirmed"],
    [500, "", "server_error"],
  ])("%i %s is %s", (status, body, outcome) => {
    expect(classify(status, body)).toBe(outcome);
  });

  it("nearest-rank percentiles", () => {
    const xs = Array.from({ length: 20 }, (_, i) => i + 1);
    expect(percentile(xs, 50)).toBe(10);
    expect(percentile(xs, 95)).toBe(19);
    expect(percentile([], 95)).toBeNull();
  });
});

describe("the dashboard's revenue by day", () => {
  it("covers whole UTC days: 14 bars, the first a full day, the last today so far", async () => {
    const now = Date.UTC(2032, 0, 20, 10, 0, 0);
    for (let d = 0; d < 20; d++) {
      const midnight = Date.UTC(2032, 0, 20 - d);
      for (const hour of [6, 18]) {
        const at = midnight + hour * 3_600_000;
        if (at < now) await writeCall(env, rec({ at, skill: "uuid_mint", amountMicro: 3000 }));
      }
    }
    const dash = await dashboardFigures(env.DB, now, 14);
    // Other tests here count the whole log: these rows go before anything is asserted.
    await env.DB.prepare("DELETE FROM call_log WHERE at >= ?1")
      .bind(Date.UTC(2032, 0, 1))
      .run();
    expect(dash.revenue_by_day.map((r) => r.day)).toEqual(
      Array.from({ length: 14 }, (_, i) => new Date(Date.UTC(2032, 0, 7 + i)).toISOString().slice(0, 10)),
    );
    // Before, the window began 14 × 24 h before now: a 15th, partial first bar (3000, not 6000).
    expect(dash.revenue_by_day.map((r) => r.x402_micro)).toEqual([...Array(13).fill(6000), 3000]);
    expect(dash.per_skill.find((s) => s.skill === "uuid_mint")).toMatchObject({
      charged_calls: 27,
      revenue_micro: 81_000,
    });
  });
});

describe("figures from a seeded call log", () => {
  it("are exact per skill and window", { timeout: 30_000 }, async () => {
    // research, last 24 h: 8 ok (10..80 ms), 1 upstream 502 (900 ms), 1 validation 422 (1 ms),
    // 1 payment 402; 3 days ago: 2 ok (5 ms). Admitted 24 h = 9, 7 d = 11.
    const rows: CallRecord[] = [
      ...Array.from({ length: 8 }, (_, i) => rec({ durationMs: (i + 1) * 10, at: NOW - (i + 1) * 60_000 })),
      rec({ status: 502, outcome: "upstream", durationMs: 900, amountMicro: 0 }),
      rec({ status: 422, outcome: "validation", durationMs: 1, amountMicro: 0 }),
      rec({ status: 402, outcome: "payment_required", durationMs: 2, paymentMethod: "none", amountMicro: 0 }),
      rec({ at: NOW - 3 * DAY, durationMs: 5, paymentMethod: "card_credit" }),
      rec({ at: NOW - 3 * DAY, durationMs: 5, paymentMethod: "card_credit" }),
      // Outside both windows: ignored.
      rec({ at: NOW - 8 * DAY, durationMs: 99_999 }),
      rec({ skill: "slugify", durationMs: 3, paymentMethod: "free_beta", amountMicro: 0 }),
    ];
    for (const r of rows) await writeCall(env, r);
    const doc = await skillStats(env.DB, NOW);
    expect(doc.computed_at).toBe(new Date(NOW).toISOString());
    expect(doc.windows["24h"].from).toBe(new Date(NOW - DAY).toISOString());
    const research = doc.skills.find((s) => s.skill === "research");
    expect(research?.windows["24h"]).toEqual({
      calls: 11,
      admitted: 9,
      succeeded: 8,
      // 8 of 9 rounded down, 1 of 9 up (a share never flatters the skill); no p95 below 20 calls.
      success_rate: 0.8888,
      p50_ms: 50,
      p95_ms: null,
      upstream_error_rate: 0.1112,
      last_success_at: new Date(NOW - 60_000).toISOString(),
      unavailable: 0,
    });
    expect(research?.windows["7d"]).toMatchObject({
      calls: 13,
      admitted: 11,
      succeeded: 10,
      success_rate: 0.909,
      p50_ms: 40,
      p95_ms: null,
      upstream_error_rate: 0.091,
    });
    // An offline skill publishes no upstream rate; a skill never called has nulls, not zeros.
    expect(doc.skills.find((s) => s.skill === "slugify")?.windows["24h"]).toMatchObject({
      calls: 1,
      success_rate: 1,
      upstream_error_rate: null,
    });
    expect(doc.skills.find((s) => s.skill === "json_sort")?.windows["7d"]).toMatchObject({
      calls: 0,
      success_rate: null,
      p95_ms: null,
    });
    expect(doc.skills.map((s) => s.skill)).toEqual(expect.arrayContaining(skills.map((s) => s.id)));

    const dash = await dashboardFigures(env.DB, NOW);
    const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
    // 8 ok x402 at 0.05 within the last 8 minutes (same UTC day as NOW), 2 card credits 3 days ago.
    expect(dash.revenue_by_day).toEqual(
      expect.arrayContaining([
        { day: day(NOW), x402_micro: 400_000, card_micro: 0 },
        { day: day(NOW - 3 * DAY), x402_micro: 0, card_micro: 100_000 },
      ]),
    );
    // Revenue only: calls and success rates per skill are the published figures' (the Cron's).
    expect(dash.per_skill.find((s) => s.skill === "research")).toEqual({
      skill: "research",
      charged_calls: 11,
      revenue_micro: 550_000,
    });
  });
});

describe("every skill call is recorded", () => {
  it("an MCP tools/call is recorded once, as an MCP call", { timeout: 30_000 }, async () => {
    const t0 = Date.now();
    const res = await fetchApp("/mcp", mcpInit("tools/call", { name: "uuid_mint", arguments: { count: 1 } }));
    expect(res.status).toBe(200);
    const { results } = await env.DB.prepare(
      "SELECT status, transport FROM call_log WHERE skill = 'uuid_mint' AND at >= ?1 ORDER BY id",
    )
      .bind(t0)
      .all<Record<string, unknown>>();
    expect(results).toEqual([{ status: 200, transport: "mcp" }]);
  });

  it("HTTP calls: 2xx and 422, with payment method and transport, no body", { timeout: 30_000 }, async () => {
    const t0 = Date.now();
    const ok = await fetchApp("/api/skills/slugify", {
      method: "POST",
      // A header cannot make an HTTP call count as MCP (only the MCP router's own request can).
      headers: { "content-type": "application/json", "x-skills-transport": "mcp" },
      body: JSON.stringify({ text: "secret words here" }),
    });
    expect(ok.status).toBe(200);
    const bad = await fetchApp("/api/skills/slugify", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ text: 42 }),
    });
    expect(bad.status).toBe(422);
    const { results } = await env.DB.prepare(
      "SELECT * FROM call_log WHERE skill = 'slugify' AND at BETWEEN ?1 AND ?1 + 600000 ORDER BY id",
    )
      .bind(t0)
      .all<Record<string, unknown>>();
    expect(results.map((r) => [r.status, r.outcome, r.payment_method, r.amount_micro, r.transport])).toEqual([
      [200, "ok", "free_beta", 0, "http"],
      [422, "validation", "free_beta", 0, "http"],
    ]);
    expect(JSON.stringify(results)).not.toContain("secret");
    // The Analytics Engine binding from wrangler.toml exists locally too (miniflare simulates it).
    expect(typeof env.CALL_STATS.writeDataPoint).toBe("function");
    expect(Number(results[0]?.duration_ms)).toBeGreaterThanOrEqual(0);
  });
});

describe("the call log is written in batches", () => {
  it("calls inside the window reach D1 together, after the window, in one write", {
    timeout: 30_000,
  }, async () => {
    const batched = { ...env, CALL_LOG_FLUSH_MS: "300" };
    const t0 = Date.now();
    const ctxs = [createExecutionContext(), createExecutionContext(), createExecutionContext()];
    const answers = await Promise.all(
      ctxs.map((ctx, i) =>
        app.fetch(
          new Request(`https://skills.test${skills.find((s) => s.id === "uuid_mint")?.endpoint}`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ count: i + 1 }),
          }),
          batched,
          ctx,
        ),
      ),
    );
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200]);
    const rows = () =>
      env.DB.prepare("SELECT coalesce(sum(n), 0) AS n FROM call_log WHERE skill = 'uuid_mint' AND at >= ?1")
        .bind(t0)
        .first<{ n: number }>();
    // Answered, but nothing written yet: the isolate gathers records for the window.
    expect((await rows())?.n).toBe(0);
    await Promise.all(ctxs.map((ctx) => waitOnExecutionContext(ctx)));
    expect((await rows())?.n).toBe(3);
  });
});

describe("CALL_LOG_FLUSH_MS with a unit", () => {
  it('"2s" is read as the default window (calls written together), not as a row per call at once', {
    timeout: 30_000,
  }, async () => {
    // Queued in one tick, so no machine is slow enough to split them: with the window the first
    // record's request flushes after it and the others join its batch; written at once ("2s" read
    // as NaN before), each record was a flush and a row of its own.
    const unit = { ...env, CALL_LOG_FLUSH_MS: "2s" };
    const at = Date.now();
    const free = () => rec({ at, skill: "flush_unit_probe", paymentMethod: "free_beta", amountMicro: 0 });
    const flushes = [queueCall(unit, free()), queueCall(unit, free()), queueCall(unit, free())];
    expect(flushes.map((f) => f !== undefined)).toEqual([true, false, false]);
    await Promise.all(flushes);
    const written = await env.DB.prepare(
      "SELECT count(*) AS rows, coalesce(sum(n), 0) AS n FROM call_log WHERE skill = 'flush_unit_probe' AND at >= ?1",
    )
      .bind(at - 60_000)
      .first<{ rows: number; n: number }>();
    expect(written).toEqual({ rows: 1, n: 3 });
  });
});

describe("GET /api/stats", () => {
  it("is public, CORS-open, max-age 60 s, and a second read is the stored copy", {
    timeout: 30_000,
  }, async () => {
    const first = await fetchApp("/api/stats");
    expect(first.status).toBe(200);
    expect(first.headers.get("access-control-allow-origin")).toBe("*");
    expect(first.headers.get("cache-control")).toBe("public, max-age=60");
    const body = await first.json<{ computed_at: string; skills: { skill: string }[] }>();
    expect(body.skills.length).toBeGreaterThanOrEqual(skills.length);
    const second = await fetchApp("/api/stats");
    expect(second.headers.get("x-stats-cache")).toBe("hit");
    expect(second.headers.get("access-control-allow-origin")).toBe("*");
    expect((await second.json<{ computed_at: string }>()).computed_at).toBe(body.computed_at);
  });
});

describe("/admin dashboard", () => {
  const adminEnv = { ...env, ADMIN_TOKEN: "dash-t0ken-secret-0123456789abcdefghij" };

  it("without the token shows only the login form; a wrong token is refused", {
    timeout: 30_000,
  }, async () => {
    const anon = await fetchApp("/admin", undefined, adminEnv);
    expect(anon.status).toBe(401);
    const html = await anon.text();
    expect(html).toContain('action="/admin/login"');
    expect(html).not.toContain("Maintainer dashboard");
    expect(anon.headers.get("content-security-policy")).toContain("default-src 'none'");
    const wrong = await adminLogin("nope", adminEnv);
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("set-cookie")).toBeNull();
    // Without ADMIN_TOKEN there is no dashboard at all.
    expect((await fetchApp("/admin", undefined, { ...env, ADMIN_TOKEN: "" })).status).toBe(503);
  });

  it("a session ends 8 h after sign-in whatever the browser keeps; its time cannot be edited", {
    timeout: 30_000,
  }, async () => {
    const cookie = sessionCookie(await adminLogin(adminEnv.ADMIN_TOKEN, adminEnv));
    const dashboard = (c: string) => fetchApp("/admin", { headers: { cookie: c } }, adminEnv);
    expect((await dashboard(cookie)).status).toBe(200);
    const [name, value] = cookie.split("=") as [string, string];
    const [issued, mac] = value.split(".") as [string, string];
    // Its time moved (within the clock skew allowed) without the MAC that signs it: refused.
    expect((await dashboard(`${name}=${Number(issued) + 30_000}.${mac}`)).status).toBe(401);
    const now = Date.now();
    const later = vi.spyOn(Date, "now").mockReturnValue(now + 9 * 3600 * 1000);
    try {
      expect((await dashboard(cookie)).status).toBe(401);
    } finally {
      later.mockRestore();
    }
  });

  it("a form body over 8192 bytes is refused with 413 before the token is read", {
    timeout: 30_000,
  }, async () => {
    const big = await adminLogin("x".repeat(9000), adminEnv);
    expect(big.status).toBe(413);
    expect(await big.json()).toEqual({ detail: "Request body larger than 8192 bytes" });
    expect((await adminLogin("x".repeat(100), adminEnv)).status).toBe(401);
  });

  it("signs in with an HttpOnly cookie that is not the token, shows figures, CSRF-guards actions", {
    timeout: 30_000,
  }, async () => {
    const login = await adminLogin(adminEnv.ADMIN_TOKEN, adminEnv);
    expect(login.status).toBe(303);
    expect(login.headers.get("location")).toBe("/admin");
    const setCookie = login.headers.get("set-cookie") ?? "";
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/Secure/);
    expect(setCookie).toMatch(/SameSite=Strict/);
    expect(setCookie).not.toContain(adminEnv.ADMIN_TOKEN);
    const cookie = setCookie.split(";")[0] as string;

    await writeCall(
      adminEnv,
      rec({ skill: "dash_probe", at: Date.now() - 5000, durationMs: 42, amountMicro: 70_000 }),
    );
    await writeCall(
      adminEnv,
      rec({
        skill: "dash_probe",
        at: Date.now() - 4000,
        durationMs: 7,
        status: 504,
        outcome: "upstream",
        amountMicro: 0,
      }),
    );
    // A refund held for the maintainer is listed with its reason (payments/refunds.ts).
    const heldId = crypto.randomUUID();
    await env.DB.prepare(
      `INSERT INTO refunds (request_id, payer, amount_micro, withheld_micro, reason, status, created_at, updated_at, hold)
       VALUES (?1, '0x00000000000000000000000000000000000000aa', 3000, 0, 'test', 'owed', 0, 0, 'check by hand')`,
    )
      .bind(heldId)
      .run();
    // The reliability table shows the published figures: the Cron's run (every 5 minutes) first.
    const { refreshPublishedStats } = await import("../../src/stats/published");
    await refreshPublishedStats(adminEnv);
    const page = await fetchApp("/admin", { headers: { cookie } }, adminEnv);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain("Maintainer dashboard");
    expect(html).toMatch(
      new RegExp(
        `<th scope="row">${heldId}</th><td>0x0+aa</td><td>\\$0\\.003000</td><td>Held: check by hand</td>`,
      ),
    );
    expect(html).toContain("<svg");
    expect(html).toMatch(
      /<th scope="row">dash_probe<\/th><td>2<\/td><td>2<\/td><td>50\.0%<\/td><td>7 ms<\/td><td>–<\/td>/,
    );
    expect(html).not.toContain(adminEnv.ADMIN_TOKEN);

    // A settle form without the CSRF token is refused, and so is a cross-site origin.
    const noCsrf = await fetchApp(
      "/admin/payouts/pricefeed/settle",
      {
        method: "POST",
        headers: { cookie, origin: "https://skills.test" },
        body: new URLSearchParams({ tx_hash: `0x${"ab".repeat(32)}` }),
      },
      adminEnv,
    );
    expect(noCsrf.status).toBe(403);
    const csrf = html.match(/name="csrf" value="([0-9a-f]{64})"/)?.[1] as string;
    expect(csrf).toBeTruthy();
    const crossSite = await fetchApp(
      "/admin/payouts/pricefeed/settle",
      {
        method: "POST",
        headers: { cookie, origin: "https://evil.test" },
        body: new URLSearchParams({ tx_hash: `0x${"ab".repeat(32)}`, csrf }),
      },
      adminEnv,
    );
    expect(crossSite.status).toBe(403);
    const badHash = await fetchApp(
      "/admin/payouts/pricefeed/settle",
      {
        method: "POST",
        headers: { cookie, origin: "https://skills.test" },
        body: new URLSearchParams({ tx_hash: "0x12", csrf }),
      },
      adminEnv,
    );
    expect(badHash.status).toBe(422);
  });
});

describe("figures and policy published beside the discovery documents", () => {
  it("/.well-known/x402 keeps its fields and adds reliability and policy", { timeout: 30_000 }, async () => {
    const res = await fetchApp("/.well-known/x402");
    expect(res.status).toBe(200);
    const doc = await res.json<Record<string, unknown>>();
    expect(doc).toMatchObject({ version: 1, resources: expect.any(Array) });
    expect(doc.reliability).toMatchObject({
      source: "https://skills.test/api/stats",
      window: "7d",
      skills: expect.any(Object),
    });
    expect(doc.policy).toMatchObject({
      charged_statuses: "2xx",
      refunds: {
        card_credit: expect.stringContaining("restored"),
        x402: expect.stringContaining("never settled"),
      },
      retention: { call_log_days: 30 },
      support_contact: env.CONTACT_EMAIL,
    });
  });

  it("llms.txt, the home page's catalog, the docs index, each skill page and /docs/reliability show the figures", {
    timeout: 30_000,
  }, async () => {
    const llms = await (await fetchApp("/llms.txt")).text();
    expect(llms).toContain("## Measured reliability");
    expect(llms).toContain("https://skills.test/api/stats");
    // A URL followed by punctuation is taken with it by plain-text readers (…/api/stats. is a 404).
    const agents = await (await fetchApp("/AGENTS.md")).text();
    const urls = `${llms}\n${agents}`.match(/https?:\/\/[^\s)\]>"'`]+/g) ?? [];
    expect(urls.length).toBeGreaterThan(10);
    expect(urls.filter((u) => /[.,;:]$/.test(u))).toEqual([]);
    const index = await (await fetchApp("/docs")).text();
    expect(index).toMatch(/class="muted reliability"/);
    const home = await (await fetchApp("/")).text();
    expect(home).toContain("Measured (7 days)");
    expect(home.match(/<td class="muted reliability">/g)?.length).toBe(15);
    const page = await fetchApp("/docs/slugify");
    expect(await page.text()).toMatch(/id="reliability">[^<]*(success over|not measured yet)/);
    const policy = await fetchApp("/docs/reliability");
    expect(policy.status).toBe(200);
    expect(policy.headers.get("content-security-policy")).toContain("default-src 'none'");
    const html = await policy.text();
    expect(html).toContain("Only calls answered 2xx are charged.");
    expect(html).toContain(`mailto:${env.CONTACT_EMAIL}`);
  });
});

describe("the admin token never reaches a log line", () => {
  it("sign-in, the dashboard and a refused action log nothing that contains it", {
    timeout: 30_000,
  }, async () => {
    const token = "log-probe-t0ken-9f3a-0123456789abcdefghij";
    const e = { ...env, ADMIN_TOKEN: token };
    const lines: string[] = [];
    const spies = (["log", "info", "warn", "error", "debug"] as const).map((m) =>
      vi.spyOn(console, m).mockImplementation((...args: unknown[]) => {
        lines.push(args.map(String).join(" "));
      }),
    );
    try {
      const login = await adminLogin(token, e);
      const cookie = sessionCookie(login);
      expect((await fetchApp("/admin", { headers: { cookie } }, e)).status).toBe(200);
      await fetchApp(
        "/admin/payouts/pricefeed/settle",
        { method: "POST", headers: { cookie }, body: "csrf=x" },
        e,
      );
      await fetchApp(
        "/admin/login",
        { method: "POST", body: new URLSearchParams({ token: `${token}x` }) },
        e,
      );
    } finally {
      for (const s of spies) s.mockRestore();
    }
    for (const l of lines) expect(l).not.toContain(token);
  });
});

describe("/admin figures from a seeded ledger", () => {
  it("payouts owed, the Mark paid button, unconfirmed settlements and credits outstanding are exact", {
    timeout: 30_000,
  }, async () => {
    const token = "ledger-t0ken-0123456789abcdefghij";
    const e = { ...env, ADMIN_TOKEN: token };
    const { settlePartner } = await import("../../src/partners/payouts");
    await settlePartner(env.DB, "notifyhook", `0x${"01".repeat(32)}`); // start from nothing owed
    const before = await dashboardFigures(env.DB);
    const now = Date.now();
    const rid = crypto.randomUUID();
    await env.DB.batch([
      env.DB.prepare(
        `INSERT INTO payout_ledger (partner_id, service_id, partner_share_micro, marketplace_fee_micro, payer, tx_hash, request_id, created_at)
         VALUES ('notifyhook', 'send', 30000, 60000, '0xabc', '0xt1', ?1, ?3), ('notifyhook', 'send', 12500, 25000, '0xabc', '0xt2', ?2, ?3)`,
      ).bind(`${rid}-a`, `${rid}-b`, now),
      env.DB.prepare(
        "INSERT INTO api_keys (id, key_hash, skill_id, calls_total, calls_left, created_at) VALUES (?1, ?2, 'slugify', 10, 7, ?3)",
      ).bind(`k-${rid}`, `h-${rid}`, now),
      env.DB.prepare(
        "INSERT INTO payment_nonces (nonce, request_id, resource, status, created_at, updated_at) VALUES (?1, ?2, 'research', 'failed', ?3, ?3)",
      ).bind(`n-${rid}`, `req-${rid}`, now),
    ]);
    const after = await dashboardFigures(env.DB);
    expect(Number(after.credits.calls_left) - Number(before.credits.calls_left)).toBe(7);
    expect(Number(after.credits.keys) - Number(before.credits.keys)).toBe(1);

    const login = await adminLogin(token, e);
    const cookie = sessionCookie(login);
    const html = await (await fetchApp("/admin", { headers: { cookie } }, e)).text();
    expect(html).toMatch(/<th scope="row">notifyhook<\/th><td>\$0\.042500<\/td>/);
    expect(html).toContain(`<th scope="row">req-${rid}</th><td>research</td>`);
    expect(html).toContain(
      `${after.credits.keys} keys, ${after.credits.calls_left} of ${after.credits.calls_total} calls outstanding.`,
    );

    const csrf = html.match(/name="csrf" value="([0-9a-f]{64})"/)?.[1] as string;
    const tx = `0x${"cd".repeat(32)}`;
    const settled = await fetchApp(
      "/admin/payouts/notifyhook/settle",
      {
        method: "POST",
        headers: { cookie, origin: "https://skills.test" },
        body: new URLSearchParams({ tx_hash: tx, csrf }),
        redirect: "manual",
      },
      e,
    );
    expect(settled.status).toBe(303);
    const page = await (await fetchApp("/admin?notice=settled", { headers: { cookie } }, e)).text();
    expect(page).toContain("Payout recorded.");
    expect(page).toMatch(
      /<th scope="row">notifyhook<\/th><td>\$0\.00<\/td><td>[^<]*<\/td><td>nothing owed<\/td>/,
    );
    expect(page).toContain(`<th scope="row">notifyhook</th><td>$0.042500</td><td>${tx}</td>`);
    // Pressing it again: nothing is owed any more.
    const again = await fetchApp(
      "/admin/payouts/notifyhook/settle",
      {
        method: "POST",
        headers: { cookie, origin: "https://skills.test" },
        body: new URLSearchParams({ tx_hash: tx, csrf }),
      },
      e,
    );
    expect(again.status).toBe(409);
  });
});

describe("x402 calls against the facilitator double are measured with method and amount", () => {
  const paidEnv = { ...env, FREE_BETA: "false", FACILITATOR_URL: `${FIXTURE}/facilitator` };
  const payer = (suffix: string) => `0x00000000000000000000000000000000000a${suffix}`;

  async function paidCall(from: string) {
    const path = "/api/skills/sha256";
    const unpaid = await fetchApp(path, { method: "POST", body: "{}" }, paidEnv);
    expect(unpaid.status).toBe(402);
    const required = decodePaymentRequiredHeader(unpaid.headers.get("payment-required") as string);
    const { payload } = unsignedPayment(required, from);
    const res = await fetchApp(
      path,
      {
        method: "POST",
        body: JSON.stringify({ text: "abc" }),
        headers: { "payment-signature": encodePaymentSignatureHeader(payload) },
      },
      paidEnv,
    );
    return { res, amount: Number(payload.accepted.amount) };
  }

  const lastRows = async (n: number) =>
    (
      await env.DB.prepare(
        "SELECT status, outcome, payment_method, amount_micro FROM call_log WHERE skill = 'sha256' AND at <= ?1 ORDER BY id DESC LIMIT ?2",
      )
        .bind(Date.now(), n)
        .all<Record<string, unknown>>()
    ).results.reverse();

  it("a settled call: 402 then 2xx charged at the price; an unconfirmed settlement: charged nothing", {
    timeout: 30_000,
  }, async () => {
    const ok = await paidCall(payer("0001"));
    expect(ok.res.status).toBe(200);
    expect(await lastRows(2)).toEqual([
      { status: 402, outcome: "payment_required", payment_method: "none", amount_micro: 0 },
      { status: 200, outcome: "ok", payment_method: "x402_v2", amount_micro: ok.amount },
    ]);
    const unconfirmed = await paidCall(payer("0003"));
    expect(unconfirmed.res.status).toBe(502);
    expect(await lastRows(1)).toEqual([
      { status: 502, outcome: "settlement_unconfirmed", payment_method: "x402_v2", amount_micro: 0 },
    ]);
    // Its claim ('failed', still inside its validity) is one reconciliation on X402_NETWORK would
    // wait on: left behind, test/payments/reconcile.test.ts counted it (waiting 2, not 1).
    const claim = await env.DB.prepare(
      "DELETE FROM payment_nonces WHERE request_id = ?1 AND status = 'failed'",
    )
      .bind(unconfirmed.res.headers.get("x-request-id"))
      .run();
    expect(claim.meta.changes).toBe(1);
  });
});

describe("card-credit calls are measured", () => {
  it("a 2xx spends one credit at the list price; a 422 takes none and is logged as paid by nothing", {
    timeout: 30_000,
  }, async () => {
    const { hashKey, newApiKey } = await import("../../src/payments/credits");
    const key = newApiKey();
    await env.DB.prepare(
      "INSERT INTO api_keys (id, key_hash, skill_id, calls_total, calls_left, created_at) VALUES (?1, ?2, 'slugify', 5, 5, ?3)",
    )
      .bind(crypto.randomUUID(), await hashKey(key), Date.now())
      .run();
    const paidEnv = { ...env, FREE_BETA: "false" };
    const t0 = Date.now();
    const headers = { "content-type": "application/json", authorization: `Bearer ${key}` };
    const ok = await fetchApp(
      "/api/skills/slugify",
      { method: "POST", headers, body: JSON.stringify({ text: "a b" }) },
      paidEnv,
    );
    expect(ok.status).toBe(200);
    const bad = await fetchApp(
      "/api/skills/slugify",
      { method: "POST", headers, body: JSON.stringify({ text: 1 }) },
      paidEnv,
    );
    expect(bad.status).toBe(422);
    const price = Number(skills.find((s) => s.id === "slugify")?.price_atomic);
    const { results } = await env.DB.prepare(
      "SELECT status, payment_method, amount_micro FROM call_log WHERE skill = 'slugify' AND at BETWEEN ?1 AND ?1 + 600000 AND status IN (200, 422) ORDER BY id",
    )
      .bind(t0)
      .all();
    // The body is validated before a credit is taken (payments/gate.ts): the 422 was refused
    // before payment (`none`, docs/STATS.md).
    expect(results).toEqual([
      { status: 200, payment_method: "card_credit", amount_micro: price },
      { status: 422, payment_method: "none", amount_micro: 0 },
    ]);
  });
});

describe("documents that quote the figures survive a stats failure", () => {
  it("docs page, llms.txt and /.well-known/x402 answer 200 without the figures when D1 fails", {
    timeout: 30_000,
  }, async () => {
    // A D1 that refuses every query (as during an outage), and no stored copy to answer instead.
    await env.KV.delete(STATS_KV_KEY);
    forgetPublishedStats();
    const broken = {
      ...env,
      DB: {
        prepare() {
          throw new Error("D1_ERROR: simulated outage");
        },
      },
    };
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const get = (path: string) => app.fetch(new Request(`https://outage.test${path}`), broken);
      const page = await get("/docs/slugify");
      expect(page.status).toBe(200);
      expect(await page.text()).not.toContain('id="reliability"');
      const home = await get("/");
      expect(home.status).toBe(200);
      expect(await home.text()).not.toContain("Measured (7 days)");
      const llms = await get("/llms.txt");
      expect(llms.status).toBe(200);
      expect(await llms.text()).not.toContain("## Measured reliability");
      const manifest = await (await get("/.well-known/x402")).json<Record<string, unknown>>();
      expect(manifest).not.toHaveProperty("reliability");
      expect(manifest).toHaveProperty("policy");
      expect(errors).toHaveBeenCalled();
    } finally {
      errors.mockRestore();
      // The failure is remembered a minute in this isolate, which every test file shares.
      forgetPublishedStats();
    }
  });
});

describe("calls that say nothing about a skill's reliability are logged apart", () => {
  const since = (t0: number, skill: string) =>
    env.DB.prepare(
      "SELECT status, outcome, payment_method, amount_micro FROM call_log WHERE skill = ?1 AND at >= ?2 ORDER BY id",
    )
      .bind(skill, t0)
      .all();

  it("a stored answer replayed for an Idempotency-Key is a replay: no second success, no second credit booked", {
    timeout: 30_000,
  }, async () => {
    const { hashKey, newApiKey } = await import("../../src/payments/credits");
    const key = newApiKey();
    await env.DB.prepare(
      "INSERT INTO api_keys (id, key_hash, skill_id, calls_total, calls_left, created_at) VALUES (?1, ?2, 'uuid_mint', 1, 1, ?3)",
    )
      .bind(crypto.randomUUID(), await hashKey(key), Date.now())
      .run();
    const t0 = Date.now();
    const init = {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${key}`,
        "idempotency-key": `pump-${crypto.randomUUID()}`,
      },
      body: JSON.stringify({ count: 1 }),
    };
    const paidEnv = { ...env, FREE_BETA: "false" };
    for (let i = 0; i < 4; i++)
      expect((await fetchApp("/api/skills/uuid-mint", init, paidEnv)).status).toBe(200);
    const price = Number(skills.find((s) => s.id === "uuid_mint")?.price_atomic);
    const { results } = await since(t0, "uuid_mint");
    expect(results).toEqual([
      { status: 200, outcome: "ok", payment_method: "card_credit", amount_micro: price },
      ...Array(3).fill({ status: 200, outcome: "replay", payment_method: "none", amount_micro: 0 }),
    ]);
  });

  it("a failure at the page the caller named is the caller's (target_error); one at Wikidata stays the skill's", {
    timeout: 30_000,
  }, async () => {
    const t0 = Date.now();
    const page = await fetchApp("/api/skills/ai-detector", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ url: `${FIXTURE}/pages/upstream-failure` }),
    });
    expect(page.status).toBe(502);
    const wikidata = await fetchApp("/api/skills/osint-graph", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ seed_entity: "upstream-failure" }),
    });
    expect(wikidata.status).toBe(502);
    expect((await since(t0, "ai_detector")).results).toEqual([
      expect.objectContaining({ status: 502, outcome: "target_error" }),
    ]);
    expect((await since(t0, "osint_graph")).results).toEqual([
      expect.objectContaining({ status: 502, outcome: "upstream" }),
    ]);
    const stats = await skillStats(env.DB, Date.now());
    // Not admitted: a caller cannot set ai_detector's success rate by naming a failing page.
    expect(stats.skills.find((s) => s.skill === "ai_detector")?.windows["24h"].upstream_error_rate ?? 0).toBe(
      0,
    );
  });
});

describe("a paid partner try in free beta is logged as paid", () => {
  it("with its x402 method and amount, not free_beta and 0 (partner routes are paid in free beta too)", {
    timeout: 30_000,
  }, async () => {
    const { paidCall, stubNetwork } = await import("../partners/network");
    stubNetwork(() => Response.json({ price: 1 }));
    const t0 = Date.now();
    const res = await paidCall("/api/partners/pricefeed/try/price");
    expect(res.status).toBe(200);
    vi.restoreAllMocks();
    const { results } = await env.DB.prepare(
      "SELECT status, outcome, payment_method, amount_micro FROM call_log WHERE skill = 'partner:pricefeed/price' AND at >= ?1 AND status = 200",
    )
      .bind(t0)
      .all();
    expect(results).toEqual([{ status: 200, outcome: "ok", payment_method: "x402_v2", amount_micro: 30000 }]);
  });
});

describe("the figures' query stays small whatever refused calls took", () => {
  it("1,000 refusals with 1,000 different server times add one group, not 1,000", {
    timeout: 60_000,
  }, async () => {
    const at = NOW + 100 * DAY; // a week of its own, so other tests' rows do not count
    const rows = Array.from({ length: 1000 }, (_, i) =>
      rec({ at, skill: "slugify", status: 402, outcome: "payment_required", durationMs: i, amountMicro: 0 }),
    );
    await env.DB.batch(
      rows.map((r) =>
        env.DB.prepare(
          "INSERT INTO call_log (at, skill, status, outcome, duration_ms, payment_method, amount_micro, transport) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        ).bind(r.at, r.skill, r.status, r.outcome, r.durationMs, r.paymentMethod, r.amountMicro, r.transport),
      ),
    );
    await writeCall(env, rec({ at, skill: "slugify", durationMs: 7 }));
    // Counts the groups the query hands the isolate.
    let groups = 0;
    const counting = new Proxy(env.DB, {
      get(target, p) {
        if (p !== "prepare") return Reflect.get(target, p).bind?.(target) ?? Reflect.get(target, p);
        return (sql: string) => {
          const stmt = target.prepare(sql);
          return {
            bind: (...args: unknown[]) => {
              const bound = stmt.bind(...args);
              return {
                all: async <T>() => {
                  const r = await bound.all<T>();
                  groups += r.results.length;
                  return r;
                },
              };
            },
          };
        };
      },
    });
    const stats = await skillStats(counting as D1Database, at + 1000);
    const slugify = stats.skills.find((s) => s.skill === "slugify")?.windows["24h"];
    expect(slugify).toMatchObject({ calls: 1001, admitted: 1, p50_ms: 7, p95_ms: null });
    expect(groups).toBe(2);
  });
});
