/**
 * A stored first-call answer (`{"status":N,"body":…}`, as runFirstPayload writes it) as the
 * success page shows it: its status, and its body's JSON text indented by jsonc-parser, which
 * formats the text itself. A parse into objects and back rounded integers past 2^53 and moved
 * integer-like keys to the front, and json_sort's answer is about exactly those.
 */
export async function storedAnswerView(
  stored: string,
): Promise<{ status: number; text: string; free?: boolean }> {
  // `"free":true`: a first call run in free beta, which took no credit (payments/checkout-first-call.ts).
  const m = /^\{"status":(\d+),("free":true,)?"body":([\s\S]*)\}$/.exec(stored);
  if (!m) return { status: 500, text: stored };
  const status = Number(m[1]);
  const free = m[2] ? { free: true } : {};
  const body = m[3] ?? "";
  // One edit per token (whitespace to insert): past this an answer is shown as stored, compact.
  if (body.length > INDENT_MAX) return { status, text: body, ...free };
  const { format } = await import("jsonc-parser");
  // The edits come in text order and do not overlap: applied in one pass. jsonc-parser's
  // applyEdits rebuilds the whole text once per edit, quadratic (260 KB: 12.5 s of CPU).
  const edits = format(body, undefined, { tabSize: 2, insertSpaces: true });
  const parts: string[] = [];
  let at = 0;
  for (const e of edits.sort((a, b) => a.offset - b.offset)) {
    parts.push(body.slice(at, e.offset), e.content);
    at = e.offset + e.length;
  }
  parts.push(body.slice(at));
  return { status, text: parts.join(""), ...free };
}

const INDENT_MAX = 256 * 1024;
