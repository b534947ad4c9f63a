import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../src/app";
import { hashKey, newApiKey } from "../src/payments/credits";
import {
  deliver,
  keyIn,
  revealPost,
  revealTokenFromPage,
  seedSession,
  sessionEvent,
} from "./payments/checkout-helpers";

/**
 * Issue 19.3: Hono answers HEAD with the GET handler, so HEAD must never change state anywhere.
 * Every GET route the app registers (read from `app.routes`, so a route added later is walked
 * too) gets a HEAD, anonymous and with every credential the app knows, in free beta and paid mode;
 * D1 and KV must be byte-for-byte unchanged.
 */
async function snapshot() {
  const tables = await env.DB.prepare(
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name != 'd1_migrations' ORDER BY name",
  ).all<{ name: string }>();
  const out: Record<string, unknown> = {};
  for (const { name } of tables.results) {
    out[name] = (await env.DB.prepare(`SELECT * FROM "${name}" ORDER BY rowid`).all()).results;
  }
  out.kv = (await env.KV.list()).keys.map((k) => k.name);
  return JSON.stringify(out);
}

const ADMIN = "head-test-admin-token-0123456789";
const SAMPLE: Record<string, string> = {
  slug: "json-sort",
  file: "json-sort.json",
  partner_id: "pricefeed",
  service_id: "price",
};

function concretePaths(app: ReturnType<typeof createApp>) {
  const paths = app.routes
    .filter((r) => r.method === "GET" && !r.path.includes("*"))
    .map((r) =>
      r.path.replace(/:(\w+)(\{[^}]*\})?/g, (_, name: string) => {
        const value = SAMPLE[name];
        if (!value) throw new Error(`no sample value for :${name} in ${r.path}; add one to SAMPLE`);
        return value;
      }),
    );
  return [...new Set(paths)];
}

describe("HEAD never changes state", () => {
  it("walks every GET route with HEAD and leaves D1 and KV unchanged", async () => {
    // State a state-changing GET could touch: a paid session Stripe knows but no webhook granted,
    // a granted session whose key waits for its reveal, and a card-credit key with credits.
    const late = await seedSession("slugify", 170, { text: "never run by HEAD" });
    const granted = await seedSession("sha256", 170, { text: "x" });
    await deliver(await sessionEvent("checkout.session.completed", granted));
    // The grant's first call must be over before the snapshot: one still running when the walk
    // starts would write during it, and this test would blame HEAD.
    for (const deadline = Date.now() + 30_000; ; ) {
      const row = await env.DB.prepare("SELECT payload_result FROM checkout_sessions WHERE id = ?1")
        .bind(granted)
        .first<{ payload_result: string | null }>();
      if (row?.payload_result) break;
      if (Date.now() > deadline) throw new Error("the granted session's first call never stored its answer");
      await new Promise((r) => setTimeout(r, 100));
    }
    const key = newApiKey();
    await env.DB.prepare(
      "INSERT INTO api_keys (id, key_hash, skill_id, calls_total, calls_left, created_at) VALUES (?1, ?2, 'sha256', 5, 5, 0)",
    )
      .bind(crypto.randomUUID(), await hashKey(key))
      .run();

    const app = createApp();
    const paths = concretePaths(app);
    expect(paths).toContain("/checkout/success");
    const queries: Record<string, string[]> = {
      "/checkout/success": [`session_id=${late}`, `session_id=${granted}`],
      "/checkout/cancel": ["skill_id=sha256"],
      "/api/admin/payouts": ["format=csv", ""],
    };
    const credentials: Record<string, string>[] = [
      {},
      { authorization: `Bearer ${key}` },
      { authorization: `Bearer ${ADMIN}` },
      { "payment-signature": "eyJ4NDAyVmVyc2lvbiI6Mn0=", "x-payment": "eyJ4NDAyVmVyc2lvbiI6MX0=" },
    ];
    const envs = [
      { ...env, ADMIN_TOKEN: ADMIN },
      { ...env, ADMIN_TOKEN: ADMIN, FREE_BETA: "false" },
    ];
    const before = await snapshot();
    let requests = 0;
    const statuses = new Map<string, number>();
    for (const path of paths) {
      for (const query of queries[path] ?? [""]) {
        for (const headers of credentials) {
          for (const e of envs) {
            const url = `https://skills.test${path}${query ? `?${query}` : ""}`;
            const res = await app.fetch(new Request(url, { method: "HEAD", headers }), e);
            expect(res.status, url).toBeLessThan(500);
            expect(await res.text(), url).toBe("");
            statuses.set(path, res.status);
            requests++;
          }
        }
      }
    }
    expect(await snapshot()).toBe(before);
    expect(requests).toBeGreaterThan(100);
    // The walk reached the pages that used to change state on GET.
    expect(statuses.get("/checkout/success")).toBe(200);

    // The reveal is still there for the buyer's explicit POST.
    const token = (await revealTokenFromPage(granted)) as string;
    expect(keyIn(await (await revealPost(granted, token)).text())).toMatch(/^mk_/);
  }, 120_000);
});
