import { type Context, Hono, type MiddlewareHandler } from "hono";
import { bearerAuth } from "hono/bearer-auth";
import * as z from "zod";
import { redactSecrets } from "../config";
import { ERROR, json, operation, VALIDATION } from "../discovery/operation";
import type { AppEnv } from "../env";
import { adminTokenRefused } from "../http/admin-token";
import { adminBindingsPresent, adminDbPresent } from "../http/bindings";
import { detail } from "../http/errors";
import { validationResponse, zodItems } from "../http/validation";
import { TX_HASH, TX_HASH_RULE, usdToMicros } from "../money";
import { partnerById } from "../partners/listing";
import {
  ledgerCsv,
  owedSummary,
  payoutsQuery,
  settleBody,
  settlePartner,
  settleRefusal,
} from "../partners/payouts";
import { ledgerReport, paymentsQuery } from "../payments/ledger-report";
import { adminQuota } from "../payments/quotas";
import { reconcile } from "../payments/reconcile";
import { type ClaimKind, resolveHeldClaim } from "../payments/reconcile-holds";
import { HAND_CHECK_RETRY_AFTER_S, HAND_NOTE_MAX, HAND_PAID_MAX_MICRO } from "../payments/refund-by-hand";
import {
  decideRefund,
  isRefundOutcome,
  REFUND_OUTCOMES,
  type RefundOutcome,
} from "../payments/refund-decisions";

export const adminRoutes = new Hono<AppEnv>();

// Limited per IP before the token is compared (quotas.ts adminQuota): otherwise the bearer token
// could be guessed here at network speed.
adminRoutes.use("/api/admin/*", adminQuota);

// Maintainer endpoints: a deployment without a usable ADMIN_TOKEN has none (503), never an open door.
adminRoutes.use("/api/admin/*", async (c, next) => {
  const refused = adminTokenRefused(c.env);
  if (refused) return detail(c, 503, `Admin endpoints are disabled: ${refused}.`);
  const token = c.env.ADMIN_TOKEN as string;
  const auth: MiddlewareHandler<AppEnv> = bearerAuth({
    token,
    noAuthenticationHeader: { message: { detail: "Missing bearer token" } },
    invalidToken: { message: { detail: "Invalid bearer token" } },
    invalidAuthenticationHeader: { message: { detail: "Malformed Authorization header" } },
  });
  return auth(c, next);
});
// After the token: a caller without it is refused as ever (401), told nothing of the deployment.
// Every admin route reads D1; only a refund decision writes KV (its copy outside D1): refundNeedsKv.
adminRoutes.use("/api/admin/*", adminDbPresent);

const admin = { tags: ["admin"], security: [{ AdminToken: [] }] };
const UNAUTHORIZED = ERROR("Missing or invalid token");
/** Every admin route reads D1: without its binding (or with admin disabled) nothing is read or changed. */
const NO_DB = (what: string) =>
  ERROR(
    `${what}: the deployment is missing its DB storage binding (or ADMIN_TOKEN is unusable, admin disabled)`,
  );

const listPayouts = operation({
  ...admin,
  method: "get",
  path: "/api/admin/payouts",
  operationId: "admin_list_payouts",
  summary: "What is owed to each partner; ?format=csv exports the payout ledger",
  query: payoutsQuery,
  responses: {
    "200": json("Owed per partner and service"),
    "401": UNAUTHORIZED,
    "422": VALIDATION,
    "503": NO_DB("Nothing read"),
  },
});
const settlePayouts = operation({
  ...admin,
  method: "post",
  path: "/api/admin/payouts/{partner_id}/settle",
  operationId: "admin_settle_payouts",
  summary:
    "Record a payout batch: owed rows of the partner (up to through_id, summing to amount_usd) are attached to it",
  body: settleBody,
  example: { tx_hash: `0x${"ab".repeat(32)}`, through_id: 42, amount_usd: 0.042 },
  responses: {
    "200": json("The batch (`replayed`: this transaction was already this batch, nothing changed)"),
    "401": UNAUTHORIZED,
    "404": ERROR("Unknown partner"),
    "409": ERROR(
      "Nothing recorded: nothing owed, the rows owed up to through_id do not sum to amount_usd (owed_usd says what they sum to now), or tx_hash is already another batch",
    ),
    "422": VALIDATION,
    "503": NO_DB("Nothing recorded"),
  },
});
const listPayments = operation({
  ...admin,
  method: "get",
  path: "/api/admin/payments",
  operationId: "admin_list_payments",
  summary: "x402 ledger: settled payments with totals",
  query: paymentsQuery,
  responses: {
    "200": json("Ledger rows"),
    "401": UNAUTHORIZED,
    "422": VALIDATION,
    "503": NO_DB("Nothing read"),
  },
});
const runReconcile = operation({
  ...admin,
  method: "post",
  path: "/api/admin/reconcile",
  operationId: "admin_reconcile",
  summary: "Reconcile unconfirmed payments against the chain now (the cron's run)",
  responses: {
    "200": json("What was checked and decided"),
    "401": UNAUTHORIZED,
    "502": ERROR("The RPC (RPC_URL) failed or did not answer JSON-RPC; nothing decided, try again"),
    "503": ERROR(
      "No RPC_URL, one that is no http(s) URL, an RPC of another chain, a missing DB binding, or the run failed otherwise (logged); nothing decided",
    ),
  },
});

/**
 * What a person decided about a row the Worker could not: one operation for the three tables that
 * hold such rows. One, not one per table: openapi.json stays within the 40 operations agent
 * directories accept; and under a static segment of its own, since a parameter beside
 * /api/admin/payouts would push every request onto Hono's slower TrieRouter (test/http/router.test.ts).
 */
const resolveBody = z.object({
  tx_hash: z.string().regex(TX_HASH, TX_HASH_RULE).optional().meta({
    description:
      "refunds: the transfer that paid the refund by hand (required with no outcome and with amount_corrected, where it is the one recorded; nothing_owed and overpayment_settled take none; compared case-insensitively, one transfer pays one refund). Claims: with landed, the transaction that holds the promised transfer (required); with not_landed, the cancel if known.",
  }),
  amount_micro: z.int().min(1).max(HAND_PAID_MAX_MICRO).optional().meta({
    description:
      "refunds: what your transfer paid, in micro-USDC as the refund's amount_micro (required with tx_hash; with amount_corrected, what it really paid). The record keeps it as the refund's amount, and what the refund owes as owed_micro (for a partner's share, re-derived at each later decision about its authorizations): a decision may change a share's amount while you pay it. Paid less: the rest is listed as a refund of its own, <request_id>:rest, held for you; paid more: GET /api/admin/payouts flags the refund (overpaid_micro).",
  }),
  outcome: z
    .enum(["queue", "landed", "not_landed", ...REFUND_OUTCOMES])
    .optional()
    .meta({
      description:
        "Claims (required there): queue puts it back in reconciliation's queue, its count of runs started again; landed records the payment (or upstream authorization) as on chain in tx_hash, as a run would; not_landed records that it moved nothing (cancelled). Refunds: none to record a hand refund (tx_hash, amount_micro); nothing_owed (with a note) records as owed to nobody a partner's share kept back in doubt (a <request_id>:withheld refund held 'kept back in doubt: …', never sent), the partner having been paid all of it, or the rest of a hand refund (a <request_id>:rest refund, owed, held for you), nobody being owed it: refunded by hand with no tx_hash, nothing_owed true; amount_corrected (tx_hash as recorded, amount_micro) corrects what a hand refund was recorded as paying while its <request_id>:rest is untouched, which follows in the same batch (rewritten, or removed when nothing is short); overpayment_settled (with a note: paid back, or written off) clears a hand refund's overpaid_micro flag.",
    }),
  note: z.string().max(HAND_NOTE_MAX).optional().meta({
    description:
      "Why, for the record (kept with the row). Required with nothing_owed and overpayment_settled.",
  }),
});
const resolveHeld = operation({
  ...admin,
  method: "post",
  path: "/api/admin/resolve/{table}/{key}",
  operationId: "admin_resolve",
  summary:
    "Record what a person decided: a held or owed refund paid by hand, or a share kept back in doubt the partner was paid (table refunds, key its request_id), or a claim held as needs_person (payment_nonces/<nonce>, upstream_payments/<id>)",
  body: resolveBody,
  example: {
    tx_hash: `0x${"cd".repeat(32)}`,
    amount_micro: 40000,
    note: "refunded from the treasury wallet",
  },
  responses: {
    "200": json(
      "The row as recorded (`replayed`: this decision was already recorded, nothing changed); a hand refund that paid less than the refund owed answers the rest too (`rest`: the refund `<request_id>:rest`, owed, held for you)",
    ),
    "401": UNAUTHORIZED,
    "404": ERROR("Unknown table or row"),
    "409": ERROR(
      "Nothing recorded: the refund is refunded or recorded as nothing owed already (amount_corrected: it is not recorded by hand with this transaction, or its rest was acted on; overpayment_settled: it is not overpaid, or settled with another note), the operating wallet's last send of it may still land, or the chain shows that send spent (it paid); the transaction pays another refund; nothing_owed for a refund that is not a share kept back in doubt and never sent, or while the request's recorded partner authorizations disagree (one undecided, held or not_landed, or what landed is less than the share); the claim is decided already or not held",
    ),
    "422": VALIDATION,
    "503": ERROR(
      "Nothing recorded: a refund the operating wallet sent needs the chain read (RPC_URL) to be recorded by hand, and it is unset, failing or on another chain (Retry-After); or recorded, but its copy outside D1 (KV, what keeps the wallet from paying it again after a D1 restore) could not be written: send the same decision again; or the deployment is missing a storage binding (DB; for a refund, KV too, where its copy goes): nothing recorded",
    ),
  },
});

export const adminOperations = [listPayouts, settlePayouts, listPayments, runReconcile, resolveHeld];

/** The x402 ledger: settled payments, newest first, with totals over the filter. */
adminRoutes.get(listPayments.route, listPayments.validate, async (c) =>
  c.json(await ledgerReport(c.env.DB, c.req.valid("query"))),
);

/** Runs the reconciler now (the same run the Cron Trigger makes every 5 minutes). */
adminRoutes.post(runReconcile.route, async (c) => {
  let summary: Awaited<ReturnType<typeof reconcile>>;
  try {
    summary = await reconcile(c.env);
  } catch (e) {
    // The run reads the chain id and head block before anything else: an RPC that fails there
    // (an HTML 502 from the provider) was a bare 500. The answer never quotes the error: viem
    // writes the RPC URL into it, and providers put their key in the URL.
    const { BaseError } = await import("../net/rpc-client");
    const rpc = e instanceof BaseError;
    console.error(
      redactSecrets(
        JSON.stringify({
          level: "error",
          msg: "admin reconcile failed",
          request_id: c.get("requestId"),
          error: String(e),
        }),
        c.env,
      ),
    );
    return rpc
      ? detail(
          c,
          502,
          "Reconciliation could not read the chain: the RPC (RPC_URL) failed or did not answer JSON-RPC; nothing was decided. Try again later; the log line of this request id has the error.",
        )
      : detail(
          c,
          503,
          "Reconciliation could not run; nothing was decided. Try again later; the log line of this request id has the error.",
        );
  }
  return c.json(summary, summary.skipped ? 503 : 200);
});

/** What is owed to each partner and service; `?format=csv` exports every ledger row. */
adminRoutes.get(listPayouts.route, listPayouts.validate, async (c) => {
  if (c.req.valid("query").format === "csv") {
    return c.body(await ledgerCsv(c.env.DB, c.get("requestId")), 200, {
      "content-type": "text/csv; charset=utf-8",
      "content-disposition": 'attachment; filename="payout-ledger.csv"',
    });
  }
  return c.json(await owedSummary(c.env.DB));
});

/**
 * Records a payout batch for a partner: owed amounts go to zero, history stays. The same body
 * again (a retry after a lost answer) answers the batch it recorded, unchanged.
 */
adminRoutes.post(settlePayouts.route, settlePayouts.validate, async (c) => {
  const partnerId = c.req.param("partner_id");
  if (!partnerById(partnerId)) return detail(c, 404, `Unknown partner "${partnerId}"`);
  const { tx_hash, through_id, amount_usd } = c.req.valid("json");
  const cover = {
    throughId: through_id,
    amountMicro: amount_usd === undefined ? undefined : Number(usdToMicros(amount_usd)),
  };
  const settled = await settlePartner(c.env.DB, partnerId, tx_hash, cover);
  if (settled.status === "recorded" || settled.status === "replayed")
    return c.json({ partner_id: partnerId, batch: settled.batch, replayed: settled.status === "replayed" });
  const refusal = settleRefusal(partnerId, settled, cover);
  return detail(c, 409, refusal.detail, refusal.extra);
});

const CLAIM_TABLES: Record<string, ClaimKind> = { payment_nonces: "payment", upstream_payments: "upstream" };

/** A field one table needs and the body left out, in the 422 shape the validator answers. */
const missing = (c: Context<AppEnv>, field: string, body: unknown) =>
  validationResponse(c, [{ loc: ["body", field], msg: "Field required", type: "missing", input: body }]);
/** The outcomes each table takes (the body's enum is their union), judged as the validator would. */
const OUTCOMES = {
  refunds: z.object({ outcome: z.enum(REFUND_OUTCOMES).optional() }),
  claims: z.object({ outcome: z.enum(["queue", "landed", "not_landed"]) }),
};
/** The 422 of an outcome `table` does not take, in the shape the body's own enum answers. */
function wrongOutcome(c: Context<AppEnv>, table: keyof typeof OUTCOMES, outcome: string) {
  const read = OUTCOMES[table].safeParse({ outcome });
  return validationResponse(c, read.success ? [] : zodItems(read.error, { outcome }, ["body"]));
}

/**
 * A held or owed refund the maintainer paid by hand, a share kept back in doubt they found the
 * partner was paid (nothing_owed), or a claim reconciliation held for a person (docs/OPERATIONS.md).
 * Never races the Worker: a refund the wallet may be sending and a claim that is not held are
 * refused. The same body again answers the recorded row.
 */
/**
 * A refund decision writes its copy to KV, so it needs both bindings, refused before its body is
 * read. A step on the route, not a `use` on a refunds path: a static segment beside :table would
 * send every request of the app through Hono's TrieRouter (test/http/router.test.ts).
 */
const refundNeedsKv: MiddlewareHandler<AppEnv> = (c, next) =>
  c.req.param("table") === "refunds" ? adminBindingsPresent(c, next) : next();

adminRoutes.post(resolveHeld.route, refundNeedsKv, resolveHeld.validate, async (c) => {
  const table = c.req.param("table");
  const key = c.req.param("key");
  const body = c.req.valid("json");
  if (table === "refunds") {
    if (body.outcome && !isRefundOutcome(body.outcome)) return wrongOutcome(c, "refunds", body.outcome);
    const outcome = body.outcome as RefundOutcome | undefined;
    // No transfer to record (the partner's, or the payer's paying back, goes in the note), and the
    // note is the only evidence the row keeps of why.
    const noteOnly = outcome === "nothing_owed" || outcome === "overpayment_settled";
    for (const field of ["tx_hash", "amount_micro"] as const)
      if (noteOnly && body[field] !== undefined)
        return validationResponse(c, [
          {
            loc: ["body", field],
            msg:
              outcome === "nothing_owed"
                ? "Not taken with outcome nothing_owed: nothing was refunded (name the partner's transfer in note)"
                : "Not taken with outcome overpayment_settled: nothing is refunded (name the payer's transfer back, or why it is written off, in note)",
            type: "value_error",
            input: body[field],
          },
        ]);
    if (noteOnly && !body.note?.trim()) return missing(c, "note", body);
    if (!noteOnly && !body.tx_hash) return missing(c, "tx_hash", body);
    if (!noteOnly && body.amount_micro === undefined) return missing(c, "amount_micro", body);
    const r = await decideRefund(c.env, key, outcome, body);
    if (r.status === "unknown") return detail(c, 404, `Unknown refund "${key}"`);
    if (r.status === "refused") return detail(c, 409, r.detail, { refund: r.row });
    // The chain could not say whether the wallet's send landed (nothing recorded), or KV refused the
    // record's copy (recorded): either way, the same body again.
    if (r.status === "unavailable")
      return detail(c, 503, r.detail, { refund: r.row }, { "Retry-After": String(HAND_CHECK_RETRY_AFTER_S) });
    return c.json({
      refund: r.row,
      ...("rest" in r && r.rest ? { rest: r.rest } : {}),
      replayed: r.status === "replayed",
    });
  }
  // Own keys only: "constructor" or "toString" would read Object.prototype's and reach the claim
  // queries as a table (a 500, not this 404).
  const kind = Object.hasOwn(CLAIM_TABLES, table) ? CLAIM_TABLES[table] : undefined;
  if (!kind)
    return detail(c, 404, `Nothing to resolve in "${table}": refunds, payment_nonces or upstream_payments`);
  if (!body.outcome) return missing(c, "outcome", body);
  if (isRefundOutcome(body.outcome)) return wrongOutcome(c, "claims", body.outcome);
  if (body.outcome === "landed" && !body.tx_hash) return missing(c, "tx_hash", body);
  const r = await resolveHeldClaim(c.env, kind, key, {
    outcome: body.outcome,
    txHash: body.tx_hash,
    note: body.note,
  });
  if (r.status === "unknown") return detail(c, 404, `Unknown ${table} row "${key}"`);
  if (r.status === "refused") return detail(c, 409, r.detail, { claim: r.claim });
  return c.json({ claim: r.claim, replayed: r.status === "replayed" });
});
