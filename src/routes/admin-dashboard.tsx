import { type Context, Hono, type MiddlewareHandler } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { csrf } from "hono/csrf";
import { HTTPException } from "hono/http-exception";
import { timingSafeEqual } from "hono/utils/buffer";
import * as z from "zod";
import { publicConfig } from "../config";
import type { AppEnv } from "../env";
import { adminTokenRefused } from "../http/admin-token";
import { adminBindingsPresent, adminDbPresent } from "../http/bindings";
import { limitBody } from "../http/body-limit";
import { detail } from "../http/errors";
import { validationResponse, zodItems } from "../http/validation";
import { wantsHtml } from "../http/wants-html";
import { TX_HASH, TX_HASH_RULE, usdToMicros } from "../money";
import { databaseSize } from "../ops/database";
import { AdminDashboardPage, AdminLoginPage } from "../pages/admin";
import { AdminRefusalPage } from "../pages/admin-refusal";
import { partnerById } from "../partners/listing";
import { largestPartnerPrice, operatingBalance } from "../partners/operating-balance";
import { owedSummary, payoutAmount, settlePartner, settleRefusal } from "../partners/payouts";
import { listedPartnerPricing } from "../partners/request";
import { freeQuota } from "../payments/quotas";
import { heldClaims } from "../payments/reconcile-holds";
import { HAND_CHECK_RETRY_AFTER_S, HAND_NOTE_MAX, HAND_PAID_MAX_MICRO } from "../payments/refund-by-hand";
import { decideRefund, REFUND_OUTCOMES } from "../payments/refund-decisions";
import { MAX_TIMEOUT_SECONDS } from "../payments/x402-terms";
import { statsIfAvailable } from "../stats/published";
import { dashboardFigures } from "../stats/query";

export const adminDashboardRoutes = new Hono<AppEnv>();

/**
 * The cookie holds a value derived from the admin token (HMAC), never the token itself: a leaked
 * cookie is not the bearer token of /api/admin, and rotating ADMIN_TOKEN signs everyone out.
 */
const COOKIE = "admin_session";
export const SESSION_SECONDS = 8 * 3600;

async function hmac(secret: string, message: string) {
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const sig = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(message));
  return [...new Uint8Array(sig)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * `<issued at, ms>.<HMAC of it>`: the session ends SESSION_SECONDS after sign-in whatever the browser
 * keeps (a copied cookie stops working then), and rotating ADMIN_TOKEN still ends every session.
 */
const sessionValue = async (token: string, issuedAt: number) =>
  `${issuedAt}.${await hmac(token, `admin-dashboard-session/v2:${issuedAt}`)}`;
/**
 * The forms' CSRF token, one per session (beside hono's Origin check): one leaked from a saved page
 * stops working when its session ends, not only when ADMIN_TOKEN is rotated.
 */
const csrfValue = (token: string, issuedAt: number) => hmac(token, `admin-dashboard-csrf/v2:${issuedAt}`);

/**
 * Sign out ends the session on the server too, not only in the browser that clicked it: the cookie
 * is stateless, so its end is written to KV (not restored with D1, kept until the cookie would have
 * expired anyway) and every signed-in check reads it. KV is eventually consistent: another Cloudflare
 * location may accept the ended cookie for up to a minute.
 */
const endedKey = (cookie: string) => `admin-session-ended:${cookie}`;

/** The sign-in time of the request's session cookie when it is this token's and within its 8 h, else null. */
async function sessionOf(c: Context<AppEnv>): Promise<number | null> {
  const token = c.env.ADMIN_TOKEN;
  const cookie = getCookie(c, COOKIE);
  if (!token || !cookie) return null;
  const issuedAt = Number(cookie.split(".")[0]);
  const age = Date.now() - issuedAt;
  if (!Number.isSafeInteger(issuedAt) || age < -60_000 || age > SESSION_SECONDS * 1000) return null;
  return (await timingSafeEqual(cookie, await sessionValue(token, issuedAt))) ? issuedAt : null;
}

/**
 * The session's sign-in time when the request carries a live dashboard session, else null. Asked
 * once per request: the storage step in front of a page or form asks first, then its handler (each
 * ask is an HMAC and a KV read, and without KV a warn line).
 */
const sessions = new WeakMap<Request, Promise<number | null>>();
function signedIn(c: Context<AppEnv>): Promise<number | null> {
  let session = sessions.get(c.req.raw);
  if (!session) {
    session = liveSession(c);
    sessions.set(c.req.raw, session);
  }
  return session;
}

async function liveSession(c: Context<AppEnv>): Promise<number | null> {
  const issuedAt = await sessionOf(c);
  if (issuedAt === null) return null;
  const cookie = getCookie(c, COOKIE) as string;
  // KV unreadable: the dashboard stays usable (the cookie's HMAC and 8 h still hold); only an ended
  // session's copy would pass meanwhile. Read inside the promise chain: without the KV binding the
  // call itself throws (sign-out still signs out; the dashboard reads D1 only, storageForSession).
  const ended = await Promise.resolve()
    .then(() => c.env.KV.get(endedKey(cookie)))
    .catch((e) => {
      console.error(
        JSON.stringify({
          level: "warn",
          msg: "admin session: KV unreadable, sign out not checked",
          error: String(e),
        }),
      );
      return null;
    });
  return ended === null ? issuedAt : null;
}

/**
 * The form's fields. A body the runtime cannot read as a form (multipart/form-data without its
 * boundary, or with one and no parts) has none: the answer is the form's own refusal, not a 500.
 */
const formOf = (c: Context<AppEnv>) => c.req.parseBody().catch(() => ({}) as Record<string, unknown>);

const originCheck = csrf();
/**
 * hono's Origin check, on each form's POST only (another method has no route here and gets the
 * app's 405): a form sent from another site is refused before any cookie is looked at. hono
 * answers it with a plain-text "Forbidden"; this is the app's JSON refusal instead.
 */
const sameSite: MiddlewareHandler<AppEnv> = async (c, next) => {
  const refused = await originCheck(c, async () => {}).then(
    () => false,
    (e) => {
      if (e instanceof HTTPException && e.status === 403) return true;
      throw e;
    },
  );
  if (refused) return detail(c, 403, "Forbidden: admin forms are accepted only from this site's own pages");
  await next();
};

// Forms are small: the largest is a refund's 500-character note, up to 12 bytes a character once
// percent-encoded (a 4-byte UTF-8 character). A bigger body is refused in the app's JSON, as the
// API's body cap refuses one.
const MAX_FORM_BYTES = 8192;
/** A JSON refusal's words: its detail, or each 422 item as "field: message". */
function refusalMessages(body: unknown): string[] {
  const d = (body as { detail?: unknown } | null)?.detail;
  if (typeof d === "string") return [d];
  if (!Array.isArray(d)) return [];
  return d.map((item: { loc?: unknown[]; msg?: unknown }) => {
    const field = Array.isArray(item?.loc) ? item.loc.slice(1).join(".") : "";
    return field ? `${field}: ${String(item?.msg)}` : String(item?.msg);
  });
}

/**
 * A browser (Accept: text/html) gets the dashboard's refusals of a form (a POST) as a page with the
 * way back; the same status and headers (Retry-After), and scripts and the API keep the JSON.
 * Outermost here, so the disabled dashboard, the body cap and the Origin check are covered as well
 * as the forms' own. Not a 405 (no form sends one) nor a 500 (the app's error answer).
 */
const refusalsAsPages: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  const res = c.res;
  const s = res.status;
  const shown = c.req.method === "POST" ? (s >= 400 && s < 500 && s !== 405) || s === 503 : s === 503;
  if (!shown || !wantsHtml(c)) return;
  if (!(res.headers.get("content-type") ?? "").startsWith("application/json")) return;
  const messages = refusalMessages(
    await res
      .clone()
      .json()
      .catch(() => null),
  );
  if (messages.length === 0) return;
  const page = await c.html(<AdminRefusalPage status={res.status} messages={messages} />, res.status as 400);
  const retryAfter = res.headers.get("retry-after");
  if (retryAfter) page.headers.set("Retry-After", retryAfter);
  c.res = undefined;
  c.res = page;
};
adminDashboardRoutes.use("/admin", refusalsAsPages);
adminDashboardRoutes.use("/admin/*", refusalsAsPages);

// Every answer is kept out of caches and search indexes by the app (http/private-answer.ts).
const privatePage: MiddlewareHandler<AppEnv> = async (c, next) => {
  const refused = adminTokenRefused(c.env);
  if (refused) return detail(c, 503, `The admin dashboard is disabled: ${refused}.`);
  await next();
};
adminDashboardRoutes.use("/admin", privatePage);
adminDashboardRoutes.use("/admin/*", privatePage);
adminDashboardRoutes.use(
  "/admin/*",
  limitBody(MAX_FORM_BYTES, (c) => detail(c, 413, `Request body larger than ${MAX_FORM_BYTES} bytes`)),
);

/**
 * The dashboard and its forms read D1: without it a signed-in maintainer gets the 503 naming it (a
 * page, through refusalsAsPages) instead of a 500; a refund decision also writes its copy to KV, so
 * it needs both (the page and a payout answer without KV, as before: signedIn reads KV best effort).
 * Anyone not signed in (a signed-out cookie included) goes on to the sign-in page or the form's
 * "Sign in first", told nothing of the deployment; sign-in and sign-out read neither (sign-out's
 * write to KV is best effort).
 */
const storageForSession =
  (present: MiddlewareHandler<AppEnv>): MiddlewareHandler<AppEnv> =>
  async (c, next) =>
    (await signedIn(c)) === null ? next() : present(c, next);
adminDashboardRoutes.get("/admin", storageForSession(adminDbPresent));
adminDashboardRoutes.post("/admin/payouts/*", storageForSession(adminDbPresent));
adminDashboardRoutes.post("/admin/refunds/*", storageForSession(adminBindingsPresent));

/** What the page says after a form's redirect (`?notice=`). */
const NOTICES: Record<string, string> = {
  settled: "Payout recorded.",
  "refund-resolved": "Refund recorded as paid by hand.",
  "refund-resolved-differs":
    "Refund recorded as paid by hand, for another amount than it owed: the rest is listed under Refunds owed, or the refund is flagged there as overpaid.",
  "refund-dismissed":
    "Refund recorded as nothing owed (a kept share the partner was paid, or a rest nobody is owed).",
  "refund-corrected": "Hand refund's amount corrected; its rest follows it.",
  "overpayment-settled": "Overpayment recorded as settled.",
  "stale-form":
    "Nothing recorded: that form's token was not this sign-in's (a page from an earlier sign-in?). This page is current; submit it again here.",
};

adminDashboardRoutes.get("/admin", async (c) => {
  const session = await signedIn(c);
  if (session === null) return c.html(<AdminLoginPage />, 401);
  const token = c.env.ADMIN_TOKEN as string;
  const [stats, figures, payouts, held, databaseBytes, wallet] = await Promise.all([
    // The published figures the Cron stores every 5 minutes (KV, this isolate's copy for a
    // minute): computing them here read every call_log row of 7 days on each view and on each
    // form's redirect, and D1 serves one query at a time, so buyers' claims queued behind it.
    statsIfAvailable(c),
    dashboardFigures(c.env.DB, Date.now(), 14, MAX_TIMEOUT_SECONDS * 1000),
    owedSummary(c.env.DB),
    // Claims and upstream authorizations held for a person: no run reads them until resolved.
    heldClaims(c.env.DB),
    // A read of no row; a size D1 does not give now is said so, not a failed page.
    databaseSize(c.env.DB).catch(() => undefined),
    // What the wallet that sends refunds and pays partners holds: a dry one is said on the page.
    operatingBalance(c.env, publicConfig(c.env, c.req.url).usdcAddress),
  ]);
  const notice = c.req.query("notice");
  const pricing = listedPartnerPricing(c);
  return c.html(
    <AdminDashboardPage
      csrf={await csrfValue(token, session)}
      stats={stats}
      figures={figures}
      payouts={payouts}
      held={held}
      databaseBytes={databaseBytes}
      wallet={wallet}
      largestPartnerMicros={pricing ? largestPartnerPrice(pricing) : 0n}
      notice={notice !== undefined && Object.hasOwn(NOTICES, notice) ? NOTICES[notice] : undefined}
    />,
  );
});

// Sign-in attempts count against the per-IP limit of free routes that cost something (RL_FREE):
// guessing the token is 20 tries a minute per address, not as many as the network allows.
adminDashboardRoutes.post("/admin/login", sameSite, freeQuota("admin-login"), async (c) => {
  const token = c.env.ADMIN_TOKEN as string;
  const form = await formOf(c);
  const given = typeof form.token === "string" ? form.token : "";
  if (!(await timingSafeEqual(given, token))) {
    return c.html(<AdminLoginPage error="Wrong admin token." />, 401);
  }
  setCookie(c, COOKIE, await sessionValue(token, Date.now()), {
    httpOnly: true,
    secure: true,
    sameSite: "Strict",
    path: "/admin",
    maxAge: SESSION_SECONDS,
  });
  return c.redirect("/admin", 303);
});

adminDashboardRoutes.post("/admin/logout", sameSite, async (c) => {
  const issuedAt = await signedIn(c);
  const cookie = getCookie(c, COOKIE);
  if (issuedAt !== null && cookie) {
    // Kept until the cookie would have expired (KV's shortest lifetime is 60 s). A failed write
    // still signs this browser out; the cookie then lives to its 8 h, as before sign out was written.
    const left = Math.ceil((issuedAt + SESSION_SECONDS * 1000 - Date.now()) / 1000);
    // Called inside the promise chain: without the KV binding the call itself throws.
    await Promise.resolve()
      .then(() => c.env.KV.put(endedKey(cookie), "1", { expirationTtl: Math.max(60, left + 60) }))
      .catch((e) =>
        console.error(
          JSON.stringify({
            level: "warn",
            msg: "admin sign out: the session's end could not be written to KV; a copy of its cookie works until it expires",
            error: String(e),
          }),
        ),
      );
  }
  deleteCookie(c, COOKIE, { path: "/admin", secure: true });
  return c.redirect("/admin", 303);
});

/**
 * The Mark paid form's cover: the partner's through_id and the amount the page showed with it,
 * both or neither (neither: every row owed now, as the API without them). Form fields are text.
 */
const settleCover = z
  .object({
    through_id: z
      .string()
      .regex(/^[1-9][0-9]{0,14}$/)
      .transform(Number)
      .optional(),
    amount_usd: z
      .string()
      .regex(/^[0-9]{1,10}(\.[0-9]{1,6})?$/)
      .transform(Number)
      .pipe(payoutAmount)
      .optional(),
  })
  .superRefine((f, ctx) => {
    for (const [have, missing] of [
      ["through_id", "amount_usd"],
      ["amount_usd", "through_id"],
    ] as const)
      if (f[have] !== undefined && f[missing] === undefined)
        ctx.addIssue({
          code: "custom",
          path: [missing],
          message: "Field required",
          params: { type: "missing" },
        });
  });

/** A dashboard form's fields, once its session and CSRF token are good; else the refusal. */
async function signedForm(c: Context<AppEnv>): Promise<Awaited<ReturnType<typeof formOf>> | Response> {
  const session = await signedIn(c);
  if (session === null) return c.html(<AdminLoginPage error="Sign in first." />, 401);
  const form = await formOf(c);
  const given = typeof form.csrf === "string" ? form.csrf : "";
  if (!(await timingSafeEqual(given, await csrfValue(c.env.ADMIN_TOKEN as string, session)))) {
    // A page from an earlier session (signed in again since, in another tab) has that session's
    // token: back to the page, which says why, rather than a bare refusal that loses the way back.
    if (/^[0-9a-f]{64}$/.test(given)) return c.redirect("/admin?notice=stale-form", 303);
    return detail(c, 403, "Invalid CSRF token");
  }
  return form;
}

/** The form's transaction hash, or its 422 in the API's shape. */
function formTxHash(c: Context<AppEnv>, form: Awaited<ReturnType<typeof formOf>>): string | Response {
  const tx = typeof form.tx_hash === "string" ? form.tx_hash : "";
  if (TX_HASH.test(tx)) return tx;
  return validationResponse(c, [
    {
      loc: ["body", "tx_hash"],
      msg: `String should be ${TX_HASH_RULE}`,
      type: "string_pattern_mismatch",
      input: tx,
    },
  ]);
}

/**
 * Form twin of POST /api/admin/payouts/:partner_id/settle (same domain call). Anything but a new
 * batch is a 409, a replay too: the button pressed twice is told the transfer is recorded already.
 */
adminDashboardRoutes.post("/admin/payouts/:partner_id/settle", sameSite, async (c) => {
  const form = await signedForm(c);
  if (form instanceof Response) return form;
  const partnerId = c.req.param("partner_id");
  if (!partnerById(partnerId)) return detail(c, 404, `Unknown partner "${partnerId}"`);
  const tx = formTxHash(c, form);
  if (tx instanceof Response) return tx;
  // The rows the page showed when it was read, and their sum: a call recorded since stays owed,
  // and a row that became owed since refuses the batch rather than being marked paid.
  const fields = { through_id: form.through_id, amount_usd: form.amount_usd };
  const read = settleCover.safeParse(fields);
  if (!read.success) return validationResponse(c, zodItems(read.error, fields, ["body"]));
  const cover = {
    throughId: read.data.through_id,
    amountMicro: read.data.amount_usd === undefined ? undefined : Number(usdToMicros(read.data.amount_usd)),
  };
  const settled = await settlePartner(c.env.DB, partnerId, tx, cover);
  if (settled.status !== "recorded") {
    const refusal = settleRefusal(partnerId, settled, cover);
    return detail(c, 409, refusal.detail, refusal.extra);
  }
  return c.redirect("/admin?notice=settled", 303);
});

/**
 * A hand refund's amount and note, as the API takes them: what the transfer paid (micro-USDC, a
 * whole number from 1 to HAND_PAID_MAX_MICRO, required) and at most HAND_NOTE_MAX characters of
 * note, none is fine. `owed_shown`: what the page showed owed (the form sends it); a typed amount
 * that differs is taken only with `differs_ok` ticked, so a slipped zero is a 422, not a record.
 */
const micros = z
  .string()
  .regex(/^[0-9]{1,13}$/, "A whole number of micro-USDC")
  .transform(Number)
  .pipe(z.int().min(1).max(HAND_PAID_MAX_MICRO));
const handRefundForm = z.object({
  amount_micro: micros,
  note: z.string().max(HAND_NOTE_MAX).optional(),
  owed_shown: z
    .string()
    .regex(/^[0-9]{1,13}$/)
    .transform(Number)
    .optional(),
  differs_ok: z.string().optional(),
});
/** The form's decision: none (a hand refund, tx_hash), or one of the API's, the same names. */
const refundOutcome = z.object({ outcome: z.enum(REFUND_OUTCOMES).optional() });
const noteOnly = z.object({ note: z.string().max(HAND_NOTE_MAX) });
const NOTICE_OF = { nothing_owed: "refund-dismissed", overpayment_settled: "overpayment-settled" } as const;

/**
 * Form twin of POST /api/admin/resolve/refunds/:request_id (same domain calls): a held or owed refund
 * the maintainer paid from their own wallet, (nothing_owed, the second form beside a share kept back
 * in doubt or a rest) one owed to nobody, and beside an overpaid hand refund its correction
 * (amount_corrected) or settlement (overpayment_settled). Anything but a new record is a 409, a
 * replay too, as for Mark paid.
 */
adminDashboardRoutes.post("/admin/refunds/:request_id/resolve", sameSite, async (c) => {
  const form = await signedForm(c);
  if (form instanceof Response) return form;
  const requestId = c.req.param("request_id");
  // An empty field is none.
  const text = (v: unknown) => (typeof v === "string" && v.trim() !== "" ? v : undefined);
  const decided = { outcome: text(form.outcome) };
  const outcome = refundOutcome.safeParse(decided);
  if (!outcome.success) return validationResponse(c, zodItems(outcome.error, decided, ["body"]));
  const chosen = outcome.data.outcome;
  if (chosen === "nothing_owed" || chosen === "overpayment_settled") {
    const fields = { note: text(form.note) };
    const read = noteOnly.safeParse(fields);
    if (!read.success) return validationResponse(c, zodItems(read.error, fields, ["body"]));
    const r = await decideRefund(c.env, requestId, chosen, read.data);
    if (r.status === "unknown") return detail(c, 404, `Unknown refund "${requestId}"`);
    if (r.status === "replayed")
      return detail(c, 409, `Refund ${requestId}: this decision is already recorded`);
    if (r.status === "refused") return detail(c, 409, r.detail);
    // Recorded, but its copy outside D1 was not written: the person is told to send it again.
    if (r.status === "unavailable")
      return detail(c, 503, r.detail, {}, { "Retry-After": String(HAND_CHECK_RETRY_AFTER_S) });
    return c.redirect(`/admin?notice=${NOTICE_OF[chosen]}`, 303);
  }
  const tx = formTxHash(c, form);
  if (tx instanceof Response) return tx;
  // An empty field is none: no note, and a missing amount.
  const fields = {
    amount_micro: text(form.amount_micro),
    note: typeof form.note === "string" && form.note !== "" ? form.note : undefined,
    owed_shown: text(form.owed_shown),
    differs_ok: text(form.differs_ok),
  };
  const read = handRefundForm.safeParse(fields);
  if (!read.success) return validationResponse(c, zodItems(read.error, fields, ["body"]));
  const { amount_micro, owed_shown, differs_ok } = read.data;
  if (!chosen && owed_shown !== undefined && amount_micro !== owed_shown && !differs_ok)
    return validationResponse(c, [
      {
        loc: ["body", "amount_micro"],
        msg: `${amount_micro} micro-USDC is not the ${owed_shown} shown owed: check it, and tick "the amount differs from what is owed" to record it`,
        type: "value_error",
        input: fields.amount_micro,
      },
    ]);
  const r = await decideRefund(c.env, requestId, chosen, { tx_hash: tx, amount_micro, note: read.data.note });
  if (r.status === "unknown") return detail(c, 404, `Unknown refund "${requestId}"`);
  if (r.status === "replayed")
    return detail(c, 409, `Refund ${requestId} is already recorded as paid by hand with this transaction`);
  if (r.status === "refused") return detail(c, 409, r.detail);
  if (r.status === "unavailable")
    return detail(c, 503, r.detail, {}, { "Retry-After": String(HAND_CHECK_RETRY_AFTER_S) });
  const notice = chosen
    ? "refund-corrected"
    : "differs" in r && r.differs
      ? "refund-resolved-differs"
      : "refund-resolved";
  return c.redirect(`/admin?notice=${notice}`, 303);
});
