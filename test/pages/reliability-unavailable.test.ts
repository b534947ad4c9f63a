import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { forgetPublishedStats, STATS_KV_KEY } from "../../src/stats/published";

/** The test database with the figures' query (a scan of call_log) refused, as a failing D1 does. */
const failingDb = new Proxy(env.DB, {
  get(target, prop) {
    if (prop === "prepare")
      return (sql: string) => {
        if (sql.includes("FROM call_log WHERE at >= ?1")) throw new Error("D1_ERROR: stats scan refused");
        return target.prepare(sql);
      };
    const v = Reflect.get(target, prop, target);
    return typeof v === "function" ? v.bind(target) : v;
  },
});

async function get(path: string, accept: string) {
  const ctx = createExecutionContext();
  const res = await createApp().fetch(
    new Request(`https://skills.test${path}`, {
      headers: { accept, "user-agent": "Mozilla/5.0 (X11; Linux x86_64) Chrome/130" },
    }),
    { ...env, DB: failingDb },
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return res;
}

// No stored copy anywhere, so the figures must be computed, and D1 refuses.
beforeEach(async () => {
  await env.KV.delete(STATS_KV_KEY);
  forgetPublishedStats();
  vi.spyOn(console, "error").mockImplementation(() => {});
});
// A failed computation is remembered a minute in this isolate, which every test file shares.
afterEach(() => {
  vi.restoreAllMocks();
  forgetPublishedStats();
});

describe("/docs/reliability while the figures cannot be had", () => {
  it("is the page, 503 with Retry-After: the charging and refund policy, and a note to come back", async () => {
    const res = await get("/docs/reliability", "text/html,application/xhtml+xml,*/*;q=0.8");
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("60");
    expect(res.headers.get("content-type")).toContain("text/html");
    const html = await res.text();
    expect(html).toMatch(/^<!DOCTYPE html><html lang="en">/);
    expect(html).toContain("<h1>Reliability and charging policy</h1>");
    expect(html).toContain("Only calls answered 2xx are charged.");
    expect(html).toContain("Card credits: A call that does not answer 2xx spends no credit");
    expect(html).toContain('id="figures-unavailable"');
    expect(html).toContain(
      "Figures unavailable right now: The published figures cannot be read right now; try again shortly.",
    );
    expect(html).not.toContain('id="figures"');
  });

  it("/api/stats keeps its JSON 503", async () => {
    const res = await get("/api/stats", "text/html");
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("60");
    expect(await res.json()).toEqual({
      detail: "The published figures cannot be read right now; try again shortly.",
    });
  });
});
