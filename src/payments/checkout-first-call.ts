import { publicConfig, redactSecrets } from "../config";
import type { Bindings } from "../env";
import { parseKeepingIntegers } from "../http/exact-integers";
import { validate } from "../http/validation";
import { sessionRef } from "../redact";
import type { AfterAnswer } from "../skills/lib/cache";
import { serializeOutput } from "../skills/lib/raw-json";
import { skillById } from "../skills/registry";
import { runSkill, skillAnswer } from "../skills/run";
import { outcomeOf, queueCall } from "../stats/record";
import { findSession, type SessionRow } from "./checkout-sessions";
import { spendCreditStatement } from "./credits";
import { keepBody } from "./idempotent-results";

/**
 * A checkout's first call: the payload the buyer sent with it, run once after the grant and past
 * the answer of whatever granted it (the webhook, the Reveal POST), its answer kept for the success
 * page. Apart from the session rows because it is a skill call, not a ledger write: it runs a
 * skill, takes its credit as a call with the key would, and is logged like one; what it shares
 * with the rows is only the claim that makes it run once.
 */

// A waitUntil run gets at most 30 s after the response; a claim older than this died with it.
export const STALE_RUN_MS = 60_000;

/**
 * Where the checkout's first call stands, for the success page: `none` (no payload), `queued`
 * (paid, not granted yet: the reveal POST grants and runs it), `running` (a live run holds it),
 * `stalled` (its run died: past STALE_RUN_MS a POST with the page's token takes it over), `done`.
 * One held back while its pack could make no call (HELD_BACK) is `stalled` too: while the pack
 * stands so the page says why it did not run, and once it can call again, a POST runs it.
 */
export function firstCallState(
  session: SessionRow | null,
  now = Date.now(),
): "none" | "queued" | "running" | "stalled" | "done" {
  if (!session?.payload) return "none";
  if (session.payload_result) return "done";
  if (session.api_key_id === null) return "queued";
  // Not claimed yet: the run starts right after the grant, which last wrote the row (updated_at).
  const since = session.payload_started_at ?? session.updated_at ?? session.created_at;
  return now - since < STALE_RUN_MS ? "running" : "stalled";
}

/**
 * The claim of a first call held back because its pack could make no call (PACK_CAN_CALL): older
 * than any live claim, so the next run takes it at once, and shown by the page as not run.
 */
const HELD_BACK = 0;

/**
 * Whether the session's pack can make a call: not disputed (open or lost) and not wholly refunded,
 * as the success page's packEnd reads it. SQL over checkout_sessions (its api_key_id).
 */
const PACK_CAN_CALL = `EXISTS (SELECT 1 FROM api_keys k WHERE k.id = checkout_sessions.api_key_id
  AND k.dispute_status IS NULL AND k.calls_revoked < k.calls_total)`;

/**
 * A checkout may carry the body of the buyer's first call: it runs once, after the grant and
 * outside the webhook's request (webhook answers stay fast), and spends a credit only if it
 * succeeds (none in free beta, as no call does then). A claim on the session makes it run once; a claim whose run died (isolate evicted)
 * goes stale and the reveal POST runs it. Its answer is kept for the success page.
 *
 * It runs only while the pack can make a call. A refund or dispute event can grant the pack it
 * takes from (the completed webhook was late), and its run then found the key frozen or emptied:
 * the skill ran (an upstream's cost), a 402 was stored, and a stored answer is never run again, so
 * after a dispute won the paid first call showed "failed with 402" for good. Now the claim itself
 * checks the pack (one statement: no event can land between a check and the claim) and, if it
 * cannot call, marks the call HELD_BACK and runs nothing; a dispute won or a refund undone runs it
 * then (the webhook), or the Reveal POST does, once, whichever claims it first.
 */
export async function runFirstPayload(env: Bindings, sessionId: string): Promise<void> {
  // The skill's work past its answer (a network skill's cache write) waits until the answer is
  // stored, where the success page (the Reveal POST waiting for it) reads it, and the run ends
  // with it: whoever holds the run in waitUntil holds that work too.
  const later: Promise<unknown>[] = [];
  try {
    await firstPayloadRun(env, sessionId, (work) => later.push(work));
  } catch (e) {
    throw tagged(e, { session_id: sessionRef(sessionId) });
  } finally {
    await Promise.allSettled(later);
  }
}

async function firstPayloadRun(env: Bindings, sessionId: string, waitUntil: AfterAnswer): Promise<void> {
  const now = Date.now();
  const started = performance.now();
  // In free beta every skill call answers unpaid, a card key's too (the payment gate lets it
  // through before reading the key): the first call is one of them, so it takes no credit and is
  // logged as free beta. It was the one call of the beta that spent a credit, $0.003 more a pack
  // than any other buyer paid. Read as it runs, as the gate reads the flag as a call arrives. The
  // pack rule stays: a first call is part of what the pack bought, and is held back while the
  // pack can make no call (disputed, wholly refunded), as the page and the Reveal POST say.
  const free = publicConfig(env, "http://localhost").freeBeta;
  const claim = await env.DB.prepare(
    `UPDATE checkout_sessions SET payload_started_at = CASE WHEN ${PACK_CAN_CALL} THEN ?2 ELSE ?4 END
     WHERE id = ?1 AND payload IS NOT NULL AND payload_result IS NULL AND api_key_id IS NOT NULL
       AND (payload_started_at IS NULL OR payload_started_at <= ?3)
     RETURNING skill_id, payload, api_key_id, payload_started_at`,
  )
    .bind(sessionId, now, now - STALE_RUN_MS, HELD_BACK)
    .first<{ skill_id: string; payload: string; api_key_id: string; payload_started_at: number }>();
  if (claim?.payload_started_at !== now) return;
  const skill = skillById(claim.skill_id);
  // As the skill's own route reads a body: json_sort and json_flatten keep integers past 2^53.
  const body = skill?.exactIntegers
    ? parseKeepingIntegers(claim.payload)
    : (JSON.parse(claim.payload) as unknown);
  let result: { status: number; body: unknown };
  // The page the buyer named failed (ai_detector's or seo's url), not the skill: logged as such.
  let targetFault = false;
  // Judged and answered as the skill's route judges and answers a body (validate, skillAnswer).
  const checked = skill ? validate(skill.input, body, ["body"]) : undefined;
  if (!skill || !checked) {
    result = { status: 404, body: { detail: `Unknown skill ${claim.skill_id}` } };
  } else if (!checked.ok) {
    result = { status: 422, body: { detail: checked.items } };
  } else {
    try {
      // The skill may keep or log its request id (osint_graph's `osint_calls` row, kept for good):
      // the whole session id opens the success page, so it gets the prefix log lines carry.
      const requestId = `checkout:${sessionRef(sessionId)}`;
      result = { status: 200, body: await runSkill(skill, checked.data, env, requestId, waitUntil) };
    } catch (e) {
      // None of these answers spends the credit.
      const failed = skillAnswer(e);
      targetFault = failed?.targetFault ?? false;
      if (!failed) logCrash(env, sessionId, skill.id, e);
      result = failed
        ? { status: failed.status, body: failed.body }
        : { status: 500, body: { detail: "The skill failed; your credit was not spent." } };
    }
  }
  // An answer over 512 KiB goes to KV and the row keeps where: D1 refuses a row over 2,000,000
  // bytes ("string or blob too big"), and a 1 MiB payload's json_sort answer is ~2.1 MiB. The key
  // is this run's own, so a stale run's late answer never replaces the one the row points to.
  const kvKey = `first-call:${sessionId}:${now}`;
  // A skill's answer is written as its route writes it (serializeOutput): json_sort's `sorted` is
  // its canonical text spliced in, so integer-like keys keep their order and long integers their
  // digits (JSON.stringify re-parsed it: {"10":…,"9":…} came back as {"9":…,"10":…}).
  // A success in free beta says so (`"free":true`): the page tells the buyer whether a credit was
  // spent from what this run did, not from the flag when the page is shown.
  const text =
    result.status === 200
      ? `{"status":200,${free ? '"free":true,' : ""}"body":${serializeOutput(result.body as Record<string, unknown>)}}`
      : JSON.stringify(result);
  const kept = await keepBody(env.KV, kvKey, text);
  const answer = kept.body ?? JSON.stringify({ status: result.status, body_kv: kept.bodyKv });
  // Written only while this run still holds the claim and no answer is stored, in one
  // transaction: a stale run's late answer can neither overwrite nor spend a second credit.
  const store = (text: string, condition = "") =>
    env.DB.prepare(
      `UPDATE checkout_sessions SET payload_result = ?1, updated_at = ?4
       WHERE id = ?2 AND payload_started_at = ?3 AND payload_result IS NULL${condition}`,
    ).bind(text, sessionId, now, Date.now());
  let stored: boolean;
  let creditTaken = false;
  // What this run's record says: the answer it stored, if any (a stale run's, or one held back to
  // run again after a dispute is won, is the other run's to log).
  let logged: number | undefined;
  if (result.status !== 200) {
    stored = (await store(answer).run()).meta.changes === 1;
    if (stored) logged = result.status;
  } else if (free) {
    // Free beta: shown without a credit, as any call is then, unless the pack stopped being able
    // to call while this ran (then held back, as below).
    const [shown] = await env.DB.batch([
      env.DB.prepare(
        `UPDATE checkout_sessions SET payload_result = ?1, updated_at = ?4
         WHERE id = ?2 AND payload_started_at = ?3 AND payload_result IS NULL AND ${PACK_CAN_CALL}`,
      ).bind(answer, sessionId, now, Date.now()),
      holdBack(env.DB, sessionId, now),
    ]);
    stored = shown?.meta.changes === 1;
    if (stored) logged = 200;
  } else {
    // A success is shown only if its credit is taken: the buyer may have spent every credit (or
    // the payment was disputed or refunded) while this ran, and the answer must not be an extra,
    // unpaid result. One transaction: the answer is stored if the key has a spendable credit, the
    // credit is taken if this run's answer is the one stored; otherwise, if the pack can no longer
    // call, the call is held back (nothing stored: it runs again if a dispute is won), and if the
    // buyer spent the credits, the refusal is stored.
    const spendable = "SELECT 1 FROM api_keys WHERE id = ?5 AND calls_left > 0 AND dispute_status IS NULL";
    const [shown, , , refused] = await env.DB.batch([
      env.DB.prepare(
        `UPDATE checkout_sessions SET payload_result = ?1, updated_at = ?4
         WHERE id = ?2 AND payload_started_at = ?3 AND payload_result IS NULL AND EXISTS (${spendable})`,
      ).bind(answer, sessionId, now, Date.now(), claim.api_key_id),
      spendCreditStatement(
        env.DB,
        `id = ?1 AND dispute_status IS NULL AND EXISTS (SELECT 1 FROM checkout_sessions WHERE id = ?2 AND payload_started_at = ?3 AND payload_result = ?4)`,
      ).bind(claim.api_key_id, sessionId, now, answer),
      holdBack(env.DB, sessionId, now),
      store(JSON.stringify({ status: 402, body: { detail: FIRST_CALL_UNPAID, charged: false } })),
    ]);
    stored = shown?.meta.changes === 1;
    // The credit is taken in the same transaction exactly when this answer is the one shown.
    creditTaken = stored;
    if (stored) logged = 200;
    else if (refused?.meta.changes === 1) logged = 402;
  }
  if (logged !== undefined)
    await logFirstCall(env, sessionId, claim.skill_id, skill ? Number(skill.price_atomic) : 0, {
      status: logged,
      targetFault,
      creditTaken,
      // Whether the skill ran: a body refused before it (422, or a skill no longer sold) is logged
      // as paid by nothing, as the route logs a card call refused for its body before its credit.
      ran: checked?.ok === true,
      free,
      durationMs: Math.max(0, Math.round(performance.now() - started), Date.now() - now),
    });
  // An answer nobody will read (withheld, or a stale run's) leaves no copy behind in KV; one that
  // stays (the delete failed) costs storage only, so it does not fail the run.
  if (!stored && kept.bodyKv) await env.KV.delete(kept.bodyKv).catch(() => undefined);
}

/** The marking of a run's claim HELD_BACK once its pack can no longer call (nothing stored). */
const holdBack = (db: D1Database, sessionId: string, claimedAt: number) =>
  db
    .prepare(
      `UPDATE checkout_sessions SET payload_started_at = ?3
       WHERE id = ?1 AND payload_started_at = ?2 AND payload_result IS NULL AND NOT ${PACK_CAN_CALL}`,
    )
    .bind(sessionId, claimedAt, HELD_BACK);

/**
 * The first call's record for the call log and Analytics Engine, as recordCall writes a skill
 * route's (stats/record.ts): it runs outside any route, so without this the published figures
 * never saw it and the dashboard's card revenue missed the credit it spent. Charged at the list
 * price only when its credit was taken. The caller runs inside waitUntil (the webhook) or the
 * Reveal POST's keepAlive: the write is awaited here, so it ends with the run, never cut off. A
 * record that cannot be written is statistics only: logged, never a failed run.
 */
async function logFirstCall(
  env: Bindings,
  sessionId: string,
  skillId: string,
  priceMicro: number,
  run: {
    status: number;
    targetFault: boolean;
    creditTaken: boolean;
    ran: boolean;
    free: boolean;
    durationMs: number;
  },
) {
  // As recordCall reads a route's answer: a 502/504 of the page the buyer named is theirs.
  const outcome = outcomeOf(run.status, undefined, run.targetFault);
  const notWritten = (e: unknown) =>
    console.error(
      JSON.stringify({
        level: "error",
        msg: "first-call record not written",
        session_id: sessionRef(sessionId),
        error: errorText(e),
      }),
    );
  try {
    await queueCall(
      env,
      {
        at: Date.now(),
        skill: skillId,
        status: run.status,
        outcome,
        durationMs: run.durationMs,
        // In free beta whatever its answer, as recordCall logs every call free beta let through. A
        // refusal took no credit: nothing paid it, as the route logs a key without credits, or a
        // card call whose body is refused (payments/gate.ts takes the credit after the body).
        paymentMethod: run.free ? "free_beta" : run.status === 402 || !run.ran ? "none" : "card_credit",
        amountMicro: outcome === "ok" && run.creditTaken ? priceMicro : 0,
        transport: "checkout",
      },
      // The statistics sink's refusal, named by the session; the D1 row is queued all the same.
      notWritten,
    );
  } catch (e) {
    notWritten(e);
  }
}

/**
 * A thrown value's text for a log line, whatever was thrown: String() itself throws for a value with
 * no toString (an Object.create(null), a Symbol.toPrimitive that throws), and in a catch that
 * threw the run away before its 500 was stored, leaving the first call running for good.
 */
function errorText(e: unknown): string {
  try {
    return String(e);
  } catch {
    try {
      return Object.prototype.toString.call(e); // "[object Object]"
    } catch {
      return "an unprintable value"; // a revoked Proxy
    }
  }
}

/**
 * A skill that crashed on a first call (an error skillAnswer does not know: a bug), which the buyer
 * sees as a 500 on the success page. The same crash on the skill's route reaches app.onError, which
 * logs it with its stack; here nothing did, so the bug behind a paid pack's first call went unseen.
 */
function logCrash(env: Bindings, sessionId: string, skill: string, e: unknown) {
  console.error(
    redactSecrets(
      JSON.stringify({
        level: "error",
        msg: "first call crashed",
        session_id: sessionRef(sessionId),
        skill,
        error: errorText(e),
        stack: e instanceof Error ? e.stack : undefined,
      }),
      env,
    ),
  );
}

/**
 * Which checkout a failed run was for (its session, or the PaymentIntent it was looked up by),
 * kept beside the error itself: runLogged gets only the run, from callers that hand it on without
 * knowing the session (the webhook's runAfter, the Reveal POST's keepAlive).
 */
const failedFor = new WeakMap<object, Record<string, string>>();
function tagged(e: unknown, where: Record<string, string>) {
  if (typeof e === "object" && e !== null && !failedFor.has(e)) failedFor.set(e, where);
  return e;
}

/** A first call run past an answer, which nobody awaits: its failure is logged, not lost. */
export const runLogged = (run: Promise<void>) =>
  run.catch((e: unknown) =>
    console.error(
      JSON.stringify({
        level: "error",
        msg: "first payload failed",
        ...(typeof e === "object" && e !== null ? failedFor.get(e) : undefined),
        error: errorText(e),
      }),
    ),
  );

/**
 * The first call of the pack a PaymentIntent paid, run if it is still to run (runFirstPayload's
 * claim decides): for a charge event that let the pack call again (a dispute won, a refund undone).
 */
export async function runPaymentFirstPayload(env: Bindings, paymentIntent: string): Promise<void> {
  let row: { id: string } | null;
  try {
    row = await env.DB.prepare(
      `SELECT id FROM checkout_sessions
       WHERE payment_intent = ?1 AND payload IS NOT NULL AND payload_result IS NULL AND api_key_id IS NOT NULL`,
    )
      .bind(paymentIntent)
      .first<{ id: string }>();
  } catch (e) {
    throw tagged(e, { payment_intent: paymentIntent });
  }
  if (row) await runFirstPayload(env, row.id);
}

const FIRST_CALL_UNPAID =
  "The first call finished after this key had no credit left (spent, or taken back by a refund): its answer is withheld and no credit was taken.";

/**
 * Starts the first call unless another run holds it, then waits up to `waitMs` for its answer (this
 * run's or the other's). The run is handed to `keepAlive` (waitUntil), not awaited: a skill slower
 * than the wait finishes after the answer, as after the webhook, and the page says it is running.
 * Awaited, a slow skill held the reveal for its whole run (the redirect from Stripe does not wait
 * for the webhook, so this POST is often the grant). The credit stays safe either way: the run's
 * claim, answer and credit are written by the run itself (runFirstPayload), not by this wait.
 */
export async function firstPayloadResult(
  env: Bindings,
  sessionId: string,
  waitMs: number,
  keepAlive: (run: Promise<void>) => void,
) {
  const run = runFirstPayload(env, sessionId);
  keepAlive(run);
  let running = true;
  const finished = run.then(
    () => (running = false),
    () => (running = false),
  );
  const deadline = Date.now() + waitMs;
  for (;;) {
    const row = await findSession(env.DB, sessionId);
    if (!row?.payload || row.payload_result || Date.now() >= deadline) return row;
    const pause = new Promise((r) => setTimeout(r, Math.min(250, Math.max(0, deadline - Date.now()))));
    // Woken early when this run ends; after that (or while another run holds it) every 250 ms.
    await (running ? Promise.race([finished, pause]) : pause);
  }
}

// What the row holds for an answer kept in KV (runFirstPayload): its status and KV key.
const KV_ANSWER = /^\{"status":\d+,"body_kv":"(first-call:[^"\\]+)"\}$/;

/**
 * The row as the success page shows it: a first-call answer kept in KV is read back into
 * `payload_result`. KV reaches other locations up to 60 s after the write, and a read can fail:
 * until the answer is readable it shows as running since it was stored (the page refreshes), never
 * as an error, and the key page that shows the key once never fails with it.
 */
export async function withFirstResult(env: Bindings, row: SessionRow | null): Promise<SessionRow | null> {
  const ref = row?.payload_result && row.payload_result.length < 1024 ? row.payload_result : undefined;
  const key = ref ? KV_ANSWER.exec(ref)?.[1] : undefined;
  if (!row || !key) return row;
  const text = await env.KV.get(key, "text").catch((e: unknown) => {
    console.error(
      JSON.stringify({
        level: "error",
        msg: "first-call answer unreadable",
        // The KV key names the session, whose whole id opens its success page: cut as elsewhere.
        key: key.replace(row.id, sessionRef(row.id)),
        error: errorText(e),
      }),
    );
    return null;
  });
  if (text !== null) return { ...row, payload_result: text };
  return { ...row, payload_result: null, payload_started_at: row.updated_at };
}
