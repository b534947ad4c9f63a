/** A JSON object (not null, not an array): what a reader of parsed JSON checks before its fields. */
export const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
