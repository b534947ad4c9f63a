// 400,000 characters JSON-escaped as \uXXXX is 2.4 MB; two 200,000-character diff inputs likewise.
export const MAX_BODY_BYTES = 5 * 1024 * 1024;
