import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { firstCallState, runFirstPayload, STALE_RUN_MS } from "../../src/payments/checkout-first-call";
import { hashKey, newApiKey } from "../../src/payments/credits";

// The checkout's first call, at an edge the suite did not pin down (found by mutating
// checkout-first-call.ts): a run whose claim was taken over stores nothing and takes no credit.
describe("a first-call run that lost its claim", () => {
  // Payments on is where a run takes a credit; in free beta it takes none whatever happens, so the
  // case is run in both and only the first can catch the mutant.
  it.each([
    ["payments on", "false"],
    ["free beta", "true"],
  ])(
    "takes no credit when another run took its claim over while it ran: the buyer pays once, to the run whose answer is shown (%s)",
    async (_mode, freeBeta) => {
      // A mutant whose credit spend did not require this run's answer to be the one stored survived:
      // a run that outlived STALE_RUN_MS and was taken over spent a credit for an answer nobody sees,
      // and the run that took over spent another.
      const sessionId = `cs_mut_${crypto.randomUUID().replaceAll("-", "")}`;
      const keyId = crypto.randomUUID();
      const now = Date.now();
      await env.DB.batch([
        env.DB.prepare(
          `INSERT INTO checkout_sessions (id, skill_id, calls, amount_cents, status, payload, payload_bytes, api_key_id, created_at, updated_at)
         VALUES (?1, 'sha256', 170, 51, 'complete', '{"text":"abc"}', 14, ?2, ?3, ?3)`,
        ).bind(sessionId, keyId, now),
        env.DB.prepare(
          "INSERT INTO api_keys (id, key_hash, skill_id, calls_total, calls_left, session_id, created_at) VALUES (?1, ?2, 'sha256', 170, 170, ?3, ?4)",
        ).bind(keyId, await hashKey(newApiKey()), sessionId, now),
      ]);
      // Another run takes the claim over the moment this one makes it (as the Reveal POST does once
      // a claim is older than STALE_RUN_MS): its payload_started_at is no longer this run's.
      const trigger = `takeover_${keyId.replaceAll("-", "")}`;
      await env.DB.prepare(
        `CREATE TRIGGER ${trigger} AFTER UPDATE OF payload_started_at ON checkout_sessions
       WHEN NEW.id = '${sessionId}' AND OLD.payload_started_at IS NULL
       BEGIN UPDATE checkout_sessions SET payload_started_at = NEW.payload_started_at + 1 WHERE id = NEW.id; END`,
      ).run();
      try {
        await runFirstPayload({ ...env, FREE_BETA: freeBeta, X402_ENABLED: "false" }, sessionId);
      } finally {
        await env.DB.prepare(`DROP TRIGGER IF EXISTS ${trigger}`).run();
      }
      const row = await env.DB.prepare(
        "SELECT s.payload_result, k.calls_left FROM checkout_sessions s JOIN api_keys k ON k.id = s.api_key_id WHERE s.id = ?1",
      )
        .bind(sessionId)
        .first();
      expect(row).toEqual({ payload_result: null, calls_left: 170 });
    },
  );
});

afterEach(() => vi.restoreAllMocks());

// Found by the clocks audit: at exactly STALE_RUN_MS the success page called a run stalled (and
// told the buyer the Reveal POST would run it again) while the claim still refused to take it over.
it("a run exactly STALE_RUN_MS old is stalled for the page and taken over by the next run, the same instant", async () => {
  const sessionId = `cs_clk_${crypto.randomUUID().replaceAll("-", "")}`;
  const keyId = crypto.randomUUID();
  const now = Date.now();
  const started = now - STALE_RUN_MS;
  await env.DB.batch([
    env.DB.prepare(
      `INSERT INTO checkout_sessions (id, skill_id, calls, amount_cents, status, payload, payload_bytes, api_key_id, payload_started_at, created_at, updated_at)
       VALUES (?1, 'sha256', 170, 51, 'complete', '{"text":"abc"}', 14, ?2, ?3, ?3, ?3)`,
    ).bind(sessionId, keyId, started),
    env.DB.prepare(
      "INSERT INTO api_keys (id, key_hash, skill_id, calls_total, calls_left, session_id, created_at) VALUES (?1, ?2, 'sha256', 170, 170, ?3, ?4)",
    ).bind(keyId, await hashKey(newApiKey()), sessionId, started),
  ]);
  const row = await env.DB.prepare("SELECT * FROM checkout_sessions WHERE id = ?1").bind(sessionId).first();
  expect(firstCallState(row as never, now)).toBe("stalled");
  vi.spyOn(Date, "now").mockReturnValue(now);
  await runFirstPayload({ ...env, FREE_BETA: "true" }, sessionId);
  const after = await env.DB.prepare("SELECT payload_result FROM checkout_sessions WHERE id = ?1")
    .bind(sessionId)
    .first<{ payload_result: string | null }>();
  expect(after?.payload_result).toContain("sha256");
});
