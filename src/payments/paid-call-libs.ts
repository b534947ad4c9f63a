/*
 * What the light payment middlewares (idempotency, idempotency-key, receipts) need only once a
 * call carries a payment or a key, gathered in one module they import() on first use, so start-up
 * never evaluates jose, viem or ajv. Named re-exports, not import("viem") itself: esbuild keeps
 * every export of a module that is imported dynamically, and only these names of this one.
 */
export { canonicalize, createJWS, OFFER_RECEIPT } from "@x402/extensions/offer-receipt";
export { isValidPaymentId, PAYMENT_IDENTIFIER } from "@x402/extensions/payment-identifier";
export { recoverTypedDataAddress } from "viem";
export { transferWithAuthorization } from "./transfer-authorization";
export { usdcDomain } from "./usdc-domain";
