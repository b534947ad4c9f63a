/** HTML's rules for parsing integers (`<ol start>`, `<li value>`): leading digits after spaces and a sign; none, undefined. */
export function htmlInteger(text: string | undefined): number | undefined {
  const digits = /^[\t\n\f\r ]*([+-]?\d+)/.exec(text ?? "");
  return digits ? Number(digits[1]) : undefined;
}
