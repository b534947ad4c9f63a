/**
 * A stored first-call answer (`{"status":N,"body":…}`, as runFirstPayload writes it) as the
 * success page shows it: its status, and its body's JSON text indented by jsonc-parser, which
 * formats the text itself. A parse into objects and back rounded integers past 2^53 and moved
 * integer-like keys to the front, and json_sort's answer is about exactly those.
 */
export async function storedAnswerView(stored: string): Promise<{ status: number; text: string }> {
  const m = /^\{"status":(\d+),"body":([\s\S]*)\}$/.exec(stored);
  if (!m) return { status: 500, text: stored };
  const body = m[2] ?? "";
  // Indenting is one edit per token: past this an answer is shown as stored, compact.
  if (body.length > INDENT_MAX) return { status: Number(m[1]), text: body };
  const { applyEdits, format } = await import("jsonc-parser");
  return {
    status: Number(m[1]),
    text: applyEdits(body, format(body, undefined, { tabSize: 2, insertSpaces: true })),
  };
}

const INDENT_MAX = 256 * 1024;
