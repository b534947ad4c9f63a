import type { PaymentPayload, SettleResponse } from "@x402/core/types";
import type { Context, MiddlewareHandler, Next } from "hono";
import type { AppEnv } from "../env";
import { afterResponse, logWriteFailure, retryWrite, writeOrRetryAfter } from "../http/after-response";
import { ledgerResource } from "../http/mcp-request";
import { sameAddress, TX_HASH } from "../money";
import { ownsClaimAfterError } from "./claim-after-error";
import {
  authorizationKey,
  claimAuthorization,
  claimIsOurs,
  keepPayoutWithClaim,
  type MatchedRequirements,
  markAuthorizationUnconfirmed,
  recordSettledPayment,
  releaseAuthorization,
  rewriteSettledPayment,
  type SettledPayment,
} from "./ledger";
import { decodePaymentResponseHeader } from "./x402-headers";
import { validBeforeRefusal } from "./x402-terms";

/** The reason of a 502 whose settlement the facilitator did not confirm (HTTP and MCP answers). */
export const SETTLEMENT_UNCONFIRMED = "settlement_unconfirmed";

/**
 * When a buyer is told to try again after the facilitator gave no verdict or did not confirm a
 * settlement (x402-http.ts). A facilitator's own Retry-After is not passed on: @x402/core's client
 * drops its answers' headers.
 */
export const FACILITATOR_RETRY_AFTER_S = 10;

/**
 * Runs after the x402 middleware verified the payment and after the body validated: claims the
 * authorization in D1 before the handler runs, so a replayed or concurrent duplicate signature
 * never runs the handler twice. A call that ends in an error frees it again (it was not settled).
 * Calls paid otherwise (card credit, free beta) never claim, even if they carry a signature.
 */
export function guardAuthorization(resource: string): MiddlewareHandler<AppEnv> {
  // Not async for a call no x402 payment was verified for (gate.ts says why).
  return (c, next) => (c.get("x402Verified") ? claimAndRun(c, next, resource) : next());
}

async function claimAndRun(c: Context<AppEnv>, next: Next, resource: string) {
  // The payload the gate verified: a v2 PAYMENT-SIGNATURE, or a v1 X-PAYMENT lifted into v2
  // form against this route's requirements. Keyed by the requirements the gate matched (not the
  // payload's own `accepted`), so both versions claim the same key.
  const verified = c.get("x402Payment");
  const payment = verified?.payload;
  const auth = verified && authorizationKey(verified.payload, verified.requirements);
  if (!payment || !auth) {
    // Only EIP-3009 authorizations carry a nonce we can claim; anything else (e.g. Permit2)
    // could not be guarded against replay or recorded, so it is refused before the handler.
    return refuse(
      c,
      "unsupported_payment_payload",
      "unsupported payment payload: sign an EIP-3009 transferWithAuthorization (the scheme this endpoint offers), and nothing beside it.",
    );
  }
  // A window the offer did not give (validBefore in milliseconds, or 2^256 − 1) is refused
  // before anything is claimed or settled: the facilitator takes any future validBefore, and
  // reconciliation looks at a claim only once it expired, so a payment that landed while its
  // call was cut off would never reach the ledger.
  const { authorization } = payment.payload as { authorization: { validBefore?: unknown } };
  const outOfWindow = validBeforeRefusal(authorization.validBefore, Math.floor(Date.now() / 1000));
  if (outOfWindow) return refuse(c, "invalid_valid_before", `${outOfWindow}. Sign a new one.`);
  const requestId = c.get("requestId");
  let claimed: boolean;
  try {
    claimed = await claimAuthorization(c.env.DB, auth, requestId, ledgerResource(c.req.raw, resource));
  } catch (e) {
    logWriteFailure(requestId, "authorization claim", e, 1);
    claimed = await ownsClaimAfterError(
      c,
      e,
      "claim release",
      () => claimIsOurs(c.env.DB, auth.key, requestId),
      () => releaseAuthorization(c.env.DB, auth.key, requestId),
    );
    // Without the claim the handler cannot run safely (a duplicate could run it twice), and
    // nothing was settled: the buyer may send the same payment again once D1 is back.
    if (!claimed) return paymentsUnavailable(c);
  }
  if (!claimed) {
    return refuse(
      c,
      "payment_authorization_reused",
      "this payment authorization was already used for another call. Sign a new one.",
    );
  }
  const claim = { key: auth.key, payment, released: false };
  c.set("paymentClaim", claim);
  await next();
  // A call that failed was not settled, so its authorization is free again; unless the handler
  // settled early (a partner call): then recordPayment writes what the settlement says. A
  // release D1 refuses is retried after the answer, which stays the call's own (a 422 is not a
  // settlement the facilitator never saw).
  if (c.res.status >= 400 && !verified?.settlement) {
    await writeOrRetryAfter(c, "claim release", () => releaseAuthorization(c.env.DB, auth.key, requestId));
    claim.released = true;
  }
}

/** When a buyer is told to try again after D1 refused the claim (as facilitator_unavailable). */
const PAYMENTS_RETRY_AFTER_S = 10;

/**
 * The 503 of a payment that could not be claimed or checked because storage failed: nothing was
 * settled or charged, and the same payment may be sent again (the shape of x402-http.ts's
 * facilitator_unavailable). `card`: a card-credit call's (payments/gate.ts, an idempotency claim
 * under a card key), in its own words: the same key, and no "nothing was charged" where a
 * give-back may still be pending; the same reason and Retry-After.
 */
export function paymentsUnavailable(c: Context<AppEnv>, payer: "x402" | "card" = "x402") {
  c.header("Retry-After", String(PAYMENTS_RETRY_AFTER_S));
  return c.json(
    {
      detail:
        payer === "card"
          ? // A card spend whose outcome D1 did not report may still be given back after the answer.
            "Card credits are temporarily unavailable: our payment records did not answer. This call keeps no credit of your key (one it may have taken is normally given back within seconds); send the same request again later, with the same key."
          : "Payments are temporarily unavailable: our payment records did not answer. Nothing was charged; send the same request again later (with the same payment; if this persists, sign a new one).",
      reason: "payments_unavailable",
    },
    503,
  );
}

/** A 402 with the route's offer to sign again (from the gate), as every x402 refusal carries. */
function refuse(c: Context<AppEnv>, reason: string, message: string) {
  const verified = c.get("x402Payment");
  if (verified) return verified.refuse(reason, message);
  return c.json({ error: `Payment rejected: ${message}`, reason }, 402);
}

/**
 * Outside the x402 middleware: once it settled (PAYMENT-RESPONSE on a 2xx), the payment becomes a
 * ledger row. A settlement that definitely failed frees the authorization; nothing is written for
 * it. A settlement whose outcome is unknown (see settlementOutcome) keeps the authorization
 * reserved and answers a clear 502 instead of the paid content.
 */
export function recordPayment(routeResource: string): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    // Read before next(): later middleware may replace c.req.raw. MCP calls are `mcp:<tool>`.
    const resource = ledgerResource(c.req.raw, routeResource);
    await next();
    const claim = c.get("paymentClaim");
    // A claim is made only for a payment the gate verified (guardAuthorization), so both are set.
    const verified = c.get("x402Payment");
    if (!claim || claim.released || !verified) return;
    const requestId = c.get("requestId");
    if (!verified.settlement) {
      // Never sent to /settle (the call failed and guardAuthorization did not get to free it):
      // nothing can have moved, so the claim is freed and the answer stays the call's own.
      await writeOrRetryAfter(c, "claim release", () => releaseAuthorization(c.env.DB, claim.key, requestId));
      return;
    }
    const header = c.res.headers.get("payment-response");
    const settlement = header ? decodePaymentResponseHeader(header) : undefined;
    const outcome = settlement ? settlementOutcome(settlement) : "unconfirmed";
    if (outcome === "unconfirmed") {
      // A partner call that was served owes the partner its share if the payment lands: kept
      // with the claim for reconciliation (reconcile-store.ts).
      // If D1 fails here, the answer is still the 502 (never a 500 that hides what happened) and
      // the mark is retried after it: a claim left 'running' would be recorded by reconciliation
      // without the refund a withheld result is owed.
      const payout = c.get("payout");
      await writeOrRetryAfter(c, "unconfirmed claim", () =>
        markAuthorizationUnconfirmed(c.env.DB, claim.key, requestId, payout),
      );
      const reason =
        settlement?.errorReason ??
        (settlement?.success
          ? `success without a transaction hash (${JSON.stringify(settlement.transaction ?? null)})`
          : "no settlement answer");
      console.error(
        JSON.stringify({
          level: "error",
          request_id: requestId,
          resource,
          error: `settlement unconfirmed: ${reason}`,
        }),
      );
      c.res = c.json(
        {
          detail:
            "The payment facilitator did not confirm the settlement. The paid result is withheld and this authorization stays reserved (it cannot run another call). If the transfer reached or reaches the chain, reconciliation records it under this request id and refunds it to the payer (less what a partner that served this call is owed); if it never does, nothing is charged and the authorization is released once it expires. Sign a new authorization to retry.",
          reason: SETTLEMENT_UNCONFIRMED,
          facilitator_reason: reason,
          transaction: settlement?.transaction || null,
          request_id: requestId,
        },
        502,
      );
      // The facilitator failed, was slow or limited us (a 429: settlementOutcome): a new
      // authorization sent at once would likely meet the same.
      c.res.headers.set("Retry-After", String(FACILITATOR_RETRY_AFTER_S));
      // The facilitator's "success" is not taken for one: the 502 does not carry it on.
      if (settlement?.success) {
        c.res.headers.delete("payment-response");
        c.res.headers.delete("x-payment-response");
      }
      return;
    }
    // Settled means charged, whatever the answer: a call settled early whose upstream then failed
    // is still a payment (its refund is recorded by the partner proxy, payments/refunds.ts).
    if (outcome === "failed" || !settlement) {
      await writeOrRetryAfter(c, "claim release", () => releaseAuthorization(c.env.DB, claim.key, requestId));
      return;
    }
    warnIfSettlementDisagrees(requestId, resource, settlement, claim.payment, verified.requirements);
    const row: SettledPayment = {
      key: claim.key,
      requestId,
      resource,
      payment: claim.payment,
      requirements: verified.requirements,
      settlement,
      payout: c.get("payout"),
    };
    // The buyer has paid on chain: a ledger write that fails must not turn the paid answer into
    // an error. It is retried after the response; the chain remains the record either way.
    try {
      await recordSettledPayment(c.env.DB, row);
    } catch (e) {
      logWriteFailure(requestId, "payments ledger", e, 1);
      await afterResponse(c, retryLedgerWrite(c.env.DB, row));
    }
  };
}

/**
 * The facilitator's reasons for a settle it refused before sending the transfer, and only those:
 * an answer counts as "nothing moved" only if it names one of them and carries no transaction. Any
 * other reason, a code we do not know included, is unconfirmed. An answer sent with a 5xx or a 429
 * is unconfirmed whatever its code (pending-settle.ts markedByStatus adds the status to its reason, so
 * it is none of these):
 *  - A 5xx is the facilitator failing somewhere in settling, perhaps after it broadcast the
 *    transfer; the code it names does not say where.
 *  - A 429 cannot be shown to come before processing in every facilitator we may be pointed at
 *    (FACILITATOR_URL): @x402/core's facilitator is transport-free (its HTTP server is each
 *    deployment's own; ours, scripts/lib/facilitator.mjs, never sends a 429), @x402/core's client
 *    retries a 429 only on /supported, never on /settle, and Coinbase's documentation says nothing
 *    of where the CDP facilitator's limit sits. A facilitator that passes its RPC node's 429 on
 *    after sending is plausible, and taking it for "nothing moved" would lose a buyer's landed
 *    payment; being wrong the other way costs one authorization held until it expires
 *    (reconciliation then frees it) and a new signature. So it stays unconfirmed (502, with
 *    Retry-After: recordPayment), as a 429 without a settle answer already was.
 * Derived from the facilitator code we and Coinbase run (the list must only ever grow with a code
 * read to be returned before sending):
 *  - @x402/evm's exact EVM facilitator, settleEIP3009 (the only payload we settle: settlement.ts
 *    guardAuthorization refuses the rest): settle() verifies the payment again first and returns
 *    its invalidReason with no transaction (scheme, EIP-712 domain, network, signature, recipient,
 *    validBefore/validAfter, value, asset contract, and with simulateInSettle the simulation's
 *    diagnosis: EIP-3009 support, token name/version, balance); then a
 *    signature it cannot parse, and a smart-wallet factory it does not allow. A counterfactual
 *    wallet whose deployment reverted (smart_wallet_deployment_failed) never reached the transfer.
 *    Its catch around the send maps the send's error by its text: an expired or not yet valid
 *    authorization, a short balance and a bad signature are the token contract's revert, which the
 *    node reports while estimating gas, before anything is broadcast, so those codes stay in.
 *  - Not in it, because they are answered after the transfer may have been sent: a spent nonce
 *    (invalid_exact_evm_nonce_already_used: perhaps our own earlier transfer, see pending-settle.ts),
 *    invalid_exact_evm_transaction_failed without a transaction (the catch's answer to any other
 *    error, e.g. an RPC timeout after the node took the transaction, and the answer to a signer's
 *    unreadable transaction hash), invalid_transaction_state (the
 *    spec's "transaction failed or was rejected"; @x402/evm's answer on its other paths for a
 *    mined revert and for a pending transaction it could not record), the transfer-event mismatch
 *    (mined), settlement_pending. Nor the simulation's own failure
 *    (invalid_exact_evm_transaction_simulation_failed): nothing of ours was sent, but our /verify
 *    simulated the same transfer and it passed, so the chain changed before the settle, and one
 *    such change is this authorization spent by someone else holding it (front-run from our
 *    broadcast's mempool, or the buyer's own submission). Where Multicall3 is deployed (Base, at
 *    0xcA11bde05977b3631167028862bE2a173976CA11) @x402/evm's diagnosis reads the nonce and names
 *    that case invalid_exact_evm_nonce_already_used; it still answers simulation_failed when that
 *    read saw the nonce unused (a node behind the one that simulated, or another revert) or failed
 *    (the error swallowed; on a chain without Multicall3, such as the local one, always). Other
 *    facilitators answer it for any revert before sending (a community Elixir one whenever gas
 *    estimation fails, a spent nonce included). So it does not prove the transfer unmoved: read
 *    as "nothing moved", the buyer was told "not charged" while the transfer had reached payTo,
 *    and no claim was left for reconciliation to find it (test/e2e/frontrun.test.ts). Kept, a
 *    transfer that really never moved costs a held authorization, freed at its expiry.
 *  - The x402 specification's codes (v2 §9) for a payment that is itself invalid: insufficient
 *    funds, the exact EVM payload's checks, and an unsupported network, scheme, version, payload
 *    or requirements. Not `unexpected_settle_error` nor `unexpected_verify_error`: the
 *    facilitator's own failure at any point. Our facilitator (scripts/lib/facilitator.mjs) answers
 *    every exception thrown while settling so (HTTP 500), and @x402/core's x402Facilitator rethrows
 *    whatever the scheme threw, after sending as well as before.
 */
const REFUSED_BEFORE_SENDING: ReadonlySet<string> = new Set([
  // @x402/evm exact facilitator (settleEIP3009 and the verify it runs first)
  "invalid_exact_evm_scheme",
  "invalid_exact_evm_missing_eip712_domain",
  "invalid_exact_evm_network_mismatch",
  "invalid_exact_evm_signature",
  "invalid_exact_evm_recipient_mismatch",
  "invalid_exact_evm_payload_authorization_valid_before",
  "invalid_exact_evm_payload_authorization_valid_after",
  "invalid_exact_evm_payload_authorization_value_mismatch",
  "asset_not_deployed_contract",
  "invalid_exact_evm_eip3009_not_supported",
  "invalid_exact_evm_token_name_mismatch",
  "invalid_exact_evm_token_version_mismatch",
  "invalid_exact_evm_insufficient_balance",
  "invalid_exact_evm_failed_to_parse_signature",
  "eip6492_factory_not_allowed",
  "smart_wallet_deployment_failed",
  // x402 specification v2 §9
  "insufficient_funds",
  "invalid_exact_evm_payload_authorization_value",
  "invalid_exact_evm_payload_signature",
  "invalid_exact_evm_payload_recipient_mismatch",
  "invalid_network",
  "invalid_payload",
  "invalid_payment_requirements",
  "invalid_scheme",
  "unsupported_scheme",
  "invalid_x402_version",
]);
/**
 * Whether a settle answer proves the outcome. Only a known refusal before sending with no
 * transaction (REFUSED_BEFORE_SENDING) is a definite failure. May still land on chain:
 * `settlement_pending`, a free-text error (an HTTP error page, a dropped connection, a 429 without
 * a settle answer), any answer sent with a 5xx or a 429, the facilitator's own
 * `unexpected_settle_error`, a spent nonce, a `transaction_failed` with no transaction, any code not
 * known to come before sending, and every failure that names a transaction. The last includes a
 * mined revert (`invalid_exact_evm_transaction_failed` with its transaction): our transaction
 * moved nothing, but the authorization may have moved the money in another one. Anyone holding the
 * signed authorization can submit it (the buyer, or whoever copied it from our broadcast), and
 * ours then reverts on the spent nonce while the USDC reaches payTo: a 402 "not charged" there
 * lost the payment and invited a second one. @x402/evm (2.27) also gives that reason, with the
 * transaction, to a broadcast whose pending record it could not store, which may still land. What
 * may have landed keeps its claim for reconciliation, which reads the authorization's state on
 * chain: used, it is recorded and the withheld result refunded; expired unused, it is freed. A
 * revert that really moved nothing costs the payer a held authorization, not a payment.
 */
export function settlementOutcome(s: SettleResponse): "settled" | "failed" | "unconfirmed" {
  // A success must name the transaction it landed in (a 32-byte hash): "" or anything else is an
  // answer we cannot check, and a ledger row without its transaction is one reconciliation never
  // reads again (it looks only at claims still open). Taken as unconfirmed instead: the result is
  // withheld and the claim kept, so reconciliation finds the transfer on chain if it landed (and
  // refunds it), or frees the authorization once it expired unused.
  if (s.success) return TX_HASH.test(s.transaction ?? "") ? "settled" : "unconfirmed";
  const reason = s.errorReason ?? "";
  if (s.transaction) return "unconfirmed";
  return REFUSED_BEFORE_SENDING.has(reason) ? "failed" : "unconfirmed";
}

/**
 * What a successful settle answer says about the payment that differs from what was settled: the
 * authorization's signer, the route's amount and network. The facilitator is a service we call,
 * not a party we take our ledger or our refunds from: what we record and pay back comes from the
 * requirements and the signed authorization, and its answer only tells whether (and in which
 * transaction) it settled. A disagreement means that answer cannot be taken at its word.
 */
export function settlementDisagreement(
  s: SettleResponse,
  payment: PaymentPayload,
  requirements: MatchedRequirements,
): string | undefined {
  const differences: string[] = [];
  const signer = authorizationKey(payment, requirements)?.payer;
  if (s.payer !== undefined && (signer === undefined || !sameAddress(s.payer, signer)))
    differences.push(`payer ${s.payer}, not the authorization's ${signer ?? "(none)"}`);
  if (s.network !== undefined && s.network !== requirements.network)
    differences.push(`network ${s.network}, not ${requirements.network}`);
  if (s.amount !== undefined && !sameAmount(s.amount, requirements.amount))
    differences.push(`amount ${JSON.stringify(s.amount)}, not ${requirements.amount}`);
  return differences.length ? differences.join("; ") : undefined;
}

function sameAmount(answered: string, asked: string) {
  try {
    return BigInt(answered) === BigInt(asked);
  } catch {
    return false;
  }
}

/**
 * Logs, loudly, a settlement whose answer disagrees with the payment; the ledger keeps our own
 * terms (and a partner call's refund is held: partner-calls.ts).
 */
function warnIfSettlementDisagrees(
  requestId: string,
  resource: string,
  s: SettleResponse,
  payment: PaymentPayload,
  requirements: MatchedRequirements,
) {
  const disagreement = settlementDisagreement(s, payment, requirements);
  if (disagreement)
    console.error(
      JSON.stringify({
        level: "error",
        request_id: requestId,
        resource,
        transaction: s.transaction,
        error: `facilitator settlement disagrees with the payment: ${disagreement}`,
      }),
    );
}

async function retryLedgerWrite(db: D1Database, row: SettledPayment) {
  // Should every retry fail too, reconciliation writes this payment from the chain, and the
  // partner's share from the claim (a separate statement: the failed batch wrote nothing), so
  // that share is kept with the same retries first (refinery and MCP resources name no partner
  // reconciliation could work the share out from).
  const log = (what: string) => (e: unknown, attempt: number) =>
    logWriteFailure(row.requestId, what, e, attempt);
  await keepPayoutWithClaim(db, row.key, row.requestId, row.payout).catch((e) => {
    log("claim payout")(e, 1);
    return retryWrite(() => keepPayoutWithClaim(db, row.key, row.requestId, row.payout), log("claim payout"));
  });
  await retryWrite(() => rewriteSettledPayment(db, row), log("payments ledger"));
}
