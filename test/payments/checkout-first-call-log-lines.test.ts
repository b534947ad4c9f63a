import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { runFirstPayload, runLogged, runPaymentFirstPayload } from "../../src/payments/checkout-first-call";
import { sessionRef } from "../../src/redact";
import { skills } from "../../src/skills/registry";
import { cardEnv } from "./checkout-helpers";

// A card pack's first call runs past every answer (the webhook's, the Reveal POST's): what goes
// wrong in it is only ever seen in the log, so each line says which checkout it was.

afterEach(() => {
  vi.restoreAllMocks();
});

/** A granted pack of 5 slugify calls whose checkout carried this first call. */
async function grantedPack(payload: unknown) {
  const id = `cs_test_loglines_${crypto.randomUUID().replaceAll("-", "")}`;
  const keyId = `k-${id}`;
  const now = Date.now();
  await env.DB.batch([
    env.DB.prepare(
      "INSERT INTO api_keys (id, key_hash, skill_id, calls_total, calls_left, created_at) VALUES (?1, ?2, 'slugify', 5, 5, ?3)",
    ).bind(keyId, `h-${id}`, now),
    env.DB.prepare(
      `INSERT INTO checkout_sessions (id, skill_id, calls, amount_cents, status, payload, api_key_id, payment_intent, created_at, updated_at)
       VALUES (?1, 'slugify', 5, 500, 'complete', ?2, ?3, ?5, ?4, ?4)`,
    ).bind(id, JSON.stringify(payload), keyId, now, `pi_${id}`),
  ]);
  return { id, keyId };
}

/** The JSON lines console.error was given whose msg is `msg`. */
function errorLines(spy: { mock: { calls: unknown[][] } }, msg: string) {
  return spy.mock.calls
    .map((args) => {
      try {
        return JSON.parse(String(args[0])) as Record<string, unknown>;
      } catch {
        return undefined;
      }
    })
    .filter((line) => line?.msg === msg);
}

/** env with its DB refusing every statement (an outage of D1). */
const withoutD1 = <T extends object>(bindings: T) => ({
  ...bindings,
  DB: new Proxy(env.DB, {
    get(target, prop) {
      if (prop === "prepare")
        return () => {
          throw new Error("D1_ERROR: simulated outage");
        };
      const value = Reflect.get(target, prop);
      return typeof value === "function" ? value.bind(target) : value;
    },
  }),
});

describe("the log lines of a card pack's first call", () => {
  it("a skill that crashes (an error skillAnswer does not know): a 500 for the buyer and one error line with session, skill and stack", async () => {
    const error = vi.spyOn(console, "error").mockImplementation(() => {});
    const slugify = skills.find((s) => s.id === "slugify");
    if (!slugify) throw new Error("slugify is not in the registry");
    vi.spyOn(slugify, "run").mockRejectedValue(new TypeError("boom: undefined is not a function"));
    const pack = await grantedPack({ text: "Crash" });
    await runFirstPayload(cardEnv, pack.id);
    const row = await env.DB.prepare("SELECT payload_result FROM checkout_sessions WHERE id = ?1")
      .bind(pack.id)
      .first<{ payload_result: string }>();
    expect(JSON.parse(row?.payload_result as string)).toMatchObject({ status: 500 });
    const lines = errorLines(error, "first call crashed");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: "error",
      session_id: sessionRef(pack.id),
      skill: "slugify",
      error: "TypeError: boom: undefined is not a function",
    });
    expect(lines[0]?.stack).toEqual(expect.stringContaining("boom"));
  });

  it("a skill that throws a value String() cannot print (a null-prototype object): the 500 is still stored, and its line says what it was", async () => {
    const error = vi.spyOn(console, "error").mockImplementation(() => {});
    const slugify = skills.find((s) => s.id === "slugify");
    if (!slugify) throw new Error("slugify is not in the registry");
    vi.spyOn(slugify, "run").mockRejectedValue(Object.create(null));
    const pack = await grantedPack({ text: "Exotic" });
    // Before: String(e) threw inside the catch, the run failed and the first call stayed running
    // (payload_result null), crashing the same on each Reveal.
    await runFirstPayload(cardEnv, pack.id);
    const row = await env.DB.prepare("SELECT payload_result FROM checkout_sessions WHERE id = ?1")
      .bind(pack.id)
      .first<{ payload_result: string | null }>();
    expect(JSON.parse(row?.payload_result as string)).toMatchObject({ status: 500 });
    expect(errorLines(error, "first call crashed")).toEqual([
      {
        level: "error",
        msg: "first call crashed",
        session_id: sessionRef(pack.id),
        skill: "slugify",
        error: "[object Object]",
      },
    ]);
  });

  it("a run that fails (D1 down) is logged by runLogged with its session", async () => {
    const error = vi.spyOn(console, "error").mockImplementation(() => {});
    const pack = await grantedPack({ text: "No D1" });
    await runLogged(runFirstPayload(withoutD1(cardEnv), pack.id));
    expect(errorLines(error, "first payload failed")).toEqual([
      {
        level: "error",
        msg: "first payload failed",
        session_id: sessionRef(pack.id),
        error: "Error: D1_ERROR: simulated outage",
      },
    ]);
  });

  it("a run looked up by its PaymentIntent that cannot be read names the PaymentIntent", async () => {
    const error = vi.spyOn(console, "error").mockImplementation(() => {});
    await runLogged(runPaymentFirstPayload(withoutD1(cardEnv), "pi_loglines_missing"));
    expect(errorLines(error, "first payload failed")).toEqual([
      expect.objectContaining({
        payment_intent: "pi_loglines_missing",
        error: "Error: D1_ERROR: simulated outage",
      }),
    ]);
  });

  it("a call record that cannot be written names the session", async () => {
    const error = vi.spyOn(console, "error").mockImplementation(() => {});
    const pack = await grantedPack({ text: "No stats" });
    const stats = {
      writeDataPoint() {
        throw new Error("analytics engine unavailable");
      },
    };
    const before = Date.now();
    await runFirstPayload({ ...cardEnv, CALL_STATS: stats }, pack.id);
    // The statistics sink's refusal loses only its own copy: the D1 call-log row is written.
    const rows = await env.DB.prepare(
      "SELECT status, payment_method FROM call_log WHERE transport = 'checkout' AND skill = 'slugify' AND at BETWEEN ?1 AND ?2",
    )
      .bind(before, Date.now())
      .all();
    expect(rows.results).toEqual([{ status: 200, payment_method: "card_credit" }]);
    expect(errorLines(error, "first-call record not written")).toEqual([
      expect.objectContaining({
        level: "error",
        session_id: sessionRef(pack.id),
        error: "Error: analytics engine unavailable",
      }),
    ]);
  });
});
