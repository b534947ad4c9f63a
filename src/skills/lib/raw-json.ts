/** Already-serialized JSON that a skill response embeds verbatim (see serializeOutput). */
export class RawJson {
  constructor(readonly text: string) {}
  toJSON() {
    return JSON.parse(this.text);
  }
}

/**
 * JSON text of a skill response. Top-level RawJson values are spliced in as written; everything
 * else goes through JSON.stringify.
 */
export function serializeOutput(out: Record<string, unknown>): string {
  const parts = Object.entries(out).map(
    ([k, v]) => `${JSON.stringify(k)}:${v instanceof RawJson ? v.text : JSON.stringify(v)}`,
  );
  return `{${parts.join(",")}}`;
}
