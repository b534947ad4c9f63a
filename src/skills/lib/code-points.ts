const PAIRS = /(?:[\ud800-\udbff][\udc00-\udfff])+/g;
const MAY_NEED_KEY = /[\ud800-\udbff\uffff]/;

/**
 * A string whose code-unit order among other such keys is `s`'s code-point order, a lone surrogate
 * (JSON allows "\ud800") being the code point it names. UTF-16 order alone puts an astral
 * character (a surrogate pair, first unit 0xD800..0xDBFF) before U+E000..U+FFFF and among lone
 * surrogates. So each run of pairs is written 0xFFFF, the pairs, 0x0000 (the end of a run sorts
 * below a further pair, as any BMP character that follows it does), and U+FFFF itself 0xFFFF,
 * 0x0000 (below a run); every other unit, lone surrogates included, stays. The code is prefix-free
 * and keeps order (test/skills/json-laws.test.ts checks it against code points), and it is two
 * native replaces, one match per run: a loop over the units in JavaScript cost ~100 ns a unit,
 * and the comparator it replaces walked a shared prefix unit by unit (2,400 keys sharing 2,000
 * characters, 4.8 MB: ~0.5 s).
 */
export const codePointSortKey = (s: string): string =>
  s.replaceAll("\uffff", "\uffff\u0000").replace(PAIRS, "\uffff$&\u0000");

const byUnits = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Sorts `items` in place by the code-point order of `keyOf(item)`, stably (equal keys keep their
 * order), with the engine's native string comparison: on sort keys when a key needs one, on the
 * keys themselves otherwise (the common case: no copy).
 */
export function sortByCodePoints<T>(items: T[], keyOf: (item: T) => string): T[] {
  if (items.length < 2) return items;
  if (!items.some((item) => MAY_NEED_KEY.test(keyOf(item))))
    return items.sort((a, b) => byUnits(keyOf(a), keyOf(b)));
  const keyed = items.map((item) => ({ item, key: codePointSortKey(keyOf(item)) }));
  keyed.sort((a, b) => byUnits(a.key, b.key));
  for (let i = 0; i < items.length; i++) items[i] = (keyed[i] as (typeof keyed)[number]).item;
  return items;
}
