import { MAX_BODY_BYTES } from "../http/limits";

/**
 * The MCP endpoint's facts that discovery documents and pages state too: plain values, no SDK, so
 * they import this at start-up without loading the MCP server.
 */

export const MCP_PATH = "/mcp";

/**
 * A tools/call carries the same arguments as the HTTP body of the skill (capped at
 * MAX_BODY_BYTES on /api/*) plus the JSON-RPC envelope and the x402 payment payload (~1 KB);
 * 64 KiB of headroom lets every call the HTTP route accepts through, and nothing much larger.
 */
export const MCP_MAX_BODY_BYTES = MAX_BODY_BYTES + 64 * 1024;

/**
 * What a JSON-RPC message may hold beyond a JSON body's bounds (json-text.ts: 200 levels, 500,000
 * arrays and objects), as MCP_MAX_BODY_BYTES allows for size: a tools/call's arguments sit two
 * levels down (the message, its params) beside `_meta`'s payment payload. The message is scanned
 * with this headroom before it is parsed (-32700 past it); the arguments are judged by their
 * route's own bounds when the call runs, so an HTTP body the route takes goes through, and one it
 * refuses gets the route's refusal (a tool error with its 422), not a parse error without an id.
 */
export const MCP_ENVELOPE_DEPTH = 16;
/** As many `{}` as the 64 KiB of MCP_MAX_BODY_BYTES's headroom hold. */
export const MCP_ENVELOPE_CONTAINERS = 32 * 1024;

export {
  PAYMENT_ERROR_META,
  PAYMENT_META,
  PAYMENT_RESPONSE_META,
  V1_PAYMENT_META,
  V1_PAYMENT_RESPONSE_META,
} from "../payments/x402-mcp-meta";
/** Our own `_meta` key: calls left on the card-credit key that paid this call. */
export const CREDITS_META = "marketplace/credits-remaining";
/**
 * Our own `_meta` keys of a paid result. The receipt (the JWS of the HTTP answer's
 * X-Payment-Receipt) is here for both ways to pay: an x402 result also has it inside
 * `x402/payment-response`, where the offer-receipt extension puts it, but a card-credit call has no
 * settlement to carry it. The request id is the one the receipt and the ledger name: the id of the
 * in-process call (of the call that ran, for an idempotent replay), not the MCP POST's X-Request-Id.
 */
export const RECEIPT_META = "marketplace/receipt";
export const REQUEST_ID_META = "marketplace/request-id";
/** Set only when the result does not carry the bytes its receipt was signed over (see callTool). */
export const RECEIPT_NOTE_META = "marketplace/receipt-note";
/**
 * Our own `_meta` key of a tools/call: the call's Idempotency-Key, which a card-credit call needs
 * to be retried without paying twice (an x402 payment carries its own id, the payment-identifier
 * extension). The MCP POST's headers are the connection's, not the call's: a header there would
 * key every call of the connection alike.
 */
export const IDEMPOTENCY_KEY_META = "marketplace/idempotency-key";
/** Set (true) on the result of a retry answered with the stored answer (X-Idempotent-Replay). */
export const IDEMPOTENT_REPLAY_META = "marketplace/idempotent-replay";

/**
 * Results up to this many characters also come as JSON text (for clients that read only text).
 * That text is the HTTP answer's body as it was signed: its UTF-8 bytes are what a receipt's
 * bodySha256 covers. Here, not in call.ts: AGENTS.md states it, and call.ts's imports are not
 * loaded at start-up.
 */
export const MCP_TEXT_COPY_MAX = 1024 * 1024;
