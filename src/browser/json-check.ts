/** The body the applet is about to send, parsed, or where it is broken in words a person can act on. */
export type BodyCheck = { ok: true; value: Record<string, unknown> } | { ok: false; message: string };

export function checkJsonBody(text: string): BodyCheck {
  if (!text.trim())
    return { ok: false, message: "The body is empty: every skill takes a JSON object, e.g. {}." };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    const reason = e instanceof Error ? e.message : String(e);
    // V8 names the character offset ("… at position 12"); turn it into a line and column.
    const at = /position (\d+)/.exec(reason);
    if (!at) return { ok: false, message: `The body is not valid JSON: ${reason}` };
    const pos = Number(at[1]);
    const before = text.slice(0, pos).split("\n");
    const line = before.length;
    const column = (before.at(-1)?.length ?? 0) + 1;
    const near = JSON.stringify(text.slice(pos, pos + 12));
    return {
      ok: false,
      message: `The body is not valid JSON: line ${line}, column ${column}, near ${near} (${reason.replace(/ in JSON at position \d+.*$/, "")}).`,
    };
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return { ok: false, message: "The body must be a JSON object ({…}), not an array, string or number." };
  }
  return { ok: true, value: value as Record<string, unknown> };
}
