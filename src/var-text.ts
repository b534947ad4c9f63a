// How the Worker reads a var: as text, a switch, a whole number. Lowest layer, no imports: plain
// Node loads it too (scripts/deploy-check.mjs), so the deploy check reads vars as the Worker does.

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
  return WHOLE_NUMBER.test(text) ? Math.min(max, Math.max(min, Number(text))) : fallback;
}

/** The switches the Worker reads (flag), and the words it knows for one: any other is read as off. */
export const SWITCHES = ["X402_ENABLED", "CARDPAY_ENABLED", "FREE_BETA", "PARTNERS_ENABLED"] as const;
export const SWITCH_WORD = /^(1|true|yes|on|0|false|no|off)$/i;
const SWITCH_ON = /^(1|true|yes|on)$/i;

/** The vars read as whole numbers (wholeNumber): a unit, a sign or a fraction is the default. */
export const WHOLE_NUMBERS = ["FETCH_TIMEOUT_MS", "NETWORK_CACHE_TTL_SECONDS", "CALL_LOG_FLUSH_MS"] as const;
export const WHOLE_NUMBER = /^\d+$/;

/**
 * A switch: an unquoted `true` or `1` in [vars] reaches the Worker as a JSON boolean or number,
 * read as its text (`.trim()` on a boolean threw: a 500). Empty text is unset. A TOML table or
 * array (`[]` included) is off, as it always was: read as unset it would turn a feature on that
 * the operator may have meant off (PARTNERS_ENABLED on has the operating wallet pay partners).
 * deploy-check refuses one; /health says it is read as off.
 */
export const flag = (value: unknown, fallback: boolean) => {
  if (typeof value === "object" && value !== null) return false;
  const text = varText(value);
  return text === "" ? fallback : SWITCH_ON.test(text.trim());
};
