const isHigh = (unit: number) => unit >= 0xd800 && unit <= 0xdbff;

/**
 * Code-point order, a lone surrogate (JSON allows "\ud800") being the code point it names.
 * UTF-16 code-unit order agrees with it except where a surrogate pair (an astral character) meets
 * a unit from U+E000..U+FFFF or a lone surrogate; the first differing code point decides. (Shifting
 * every surrogate above U+FFFF, as before, put "\udc00" after "\ud800\udc00" and "\ud800" after
 * "\uffff": 0xDC00 and 0xD800 are below both.)
 */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  if (i === n) return a.length - b.length;
  // The first differing unit may be the second half of a pair whose shared first half is at i - 1.
  if (i > 0 && isHigh(a.charCodeAt(i - 1))) {
    const x = a.codePointAt(i - 1) as number;
    const y = b.codePointAt(i - 1) as number;
    if (x !== y) return x - y;
  }
  return (a.codePointAt(i) as number) - (b.codePointAt(i) as number);
}
