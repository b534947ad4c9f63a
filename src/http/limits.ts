// 400,000 characters JSON-escaped as \uXXXX is 2.4 MB; two 200,000-character diff inputs likewise.
export const MAX_BODY_BYTES = 5 * 1024 * 1024;

/** After a Rate Limiting binding's fault, how long this isolate lets calls through without asking it again. */
export const RATE_LIMIT_SKIP_MS = 10_000;
