// 400,000 characters JSON-escaped as \uXXXX is 2.4 MB; two 200,000-character diff inputs likewise.
export const MAX_BODY_BYTES = 5 * 1024 * 1024;

/**
 * How long a call waits for a Rate Limiting binding's limit(), which Cloudflare answers from
 * counters on the Worker's own machine with no network request awaited (payments/quotas.ts): a
 * normal answer is far below a millisecond, so a second is a fault, and the call goes on unlimited.
 */
export const RATE_LIMIT_WAIT_MS = 1_000;
/** After such a fault, how long this isolate lets calls through without asking that binding again. */
export const RATE_LIMIT_SKIP_MS = 10_000;
