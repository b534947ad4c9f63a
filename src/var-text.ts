// How the Worker reads a var: as text. Lowest layer, no imports.

/**
 * A var or secret as text. An unquoted number or boolean in wrangler.toml's [vars] (or one set in
 * the dashboard as JSON) reaches the Worker as a JSON binding, a TOML table or array as an object:
 * `.trim()` on one threw, a 500 on every request that read it. A number or boolean is read as its
 * text, as the quoted value would be (`5` as "5"); a table or array is unset (""): no var holds one
 * as its value, and String() made it "[object Object]", published as the contact address and the
 * ownership proofs, or counted as a set RPC_URL or webhook secret. Unset is "". deploy-check
 * refuses all of them; /health names them (routes/health.ts).
 */
export const varText = (value: unknown): string =>
  typeof value === "string"
    ? value
    : value === undefined || value === null || typeof value === "object"
      ? ""
      : String(value);

/**
 * Whether a var is set but not text (a JSON number, boolean, table or array). /health says only
 * that, never which kind: the kind would tell a boolean from a number, a class of its value.
 */
export const notText = (value: unknown) => value !== undefined && value !== null && typeof value !== "string";

/**
 * A whole number as written ("8000", or an unquoted 8000), within [min, max]; anything else (a
 * unit, "8s"; a sign; a fraction) is the default: parseInt read "8s" as 8, and Number() read it as
 * NaN, so FETCH_TIMEOUT_MS "8s" failed every network fetch and CALL_LOG_FLUSH_MS "2s" wrote each
 * call at once. deploy-check refuses the same shapes (wordProblems).
 */
export function wholeNumber(value: unknown, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER) {
  const text = varText(value).trim();
  return /^\d+$/.test(text) ? Math.min(max, Math.max(min, Number(text))) : fallback;
}
