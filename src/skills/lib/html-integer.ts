/**
 * HTML's rules for parsing integers (`<ol start>`, `<li value>`): leading digits after spaces and a
 * sign; none, undefined. One outside a 32-bit signed integer is a parse error too: Chromium then
 * treats the attribute as missing (`<li value=99999999999>` takes the next number).
 */
export function htmlInteger(text: string | undefined): number | undefined {
  const digits = /^[\t\n\f\r ]*([+-]?\d+)/.exec(text ?? "");
  const n = digits ? Number(digits[1]) : undefined;
  return n !== undefined && n >= -(2 ** 31) && n < 2 ** 31 ? n : undefined;
}
