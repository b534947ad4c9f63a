const PAIRS = /(?:[\ud800-\udbff][\udc00-\udfff])+/g;
const HIGH = /[\ud800-\udbff]/;
const NEEDS_KEY = /[\ud800-\udbff\uffff]/;
const ABOVE_SURROGATES = /[\ue000-\uffff]/;

/**
 * A string whose code-unit order among other such keys is `s`'s code-point order, a lone surrogate
 * (JSON allows "\ud800") being the code point it names. UTF-16 order alone puts an astral
 * character (a surrogate pair, first unit 0xD800..0xDBFF) before U+E000..U+FFFF and among lone
 * surrogates. So each run of pairs is written 0xFFFF, the pairs, 0x0000 (the end of a run sorts
 * below a further pair, as any BMP character that follows it does), and U+FFFF itself 0xFFFF,
 * 0x0000 (below a run); every other unit, lone surrogates included, stays. Each piece's code is
 * prefix-free and keeps order (test/skills/json-laws.test.ts checks the whole against code
 * points), and it is native work, one match per run (a split and join for U+FFFF: replaceAll took
 * ~3x as long on 2,400 keys of 690 U+FFFF): a loop over the units in JavaScript
 * cost ~100 ns a unit, and the comparator it replaces walked a shared prefix unit by unit (2,400
 * keys sharing 2,000 characters, 4.8 MB: ~0.5 s). A string without a high surrogate or U+FFFF is
 * its own sort key.
 */
export const codePointSortKey = (s: string): string =>
  s.split("\uffff").join("\uffff\u0000").replace(PAIRS, "\uffff$&\u0000");

const sortKeyOf = (s: string): string => (NEEDS_KEY.test(s) ? codePointSortKey(s) : s);

/**
 * Whether native (code-unit) order of `keys` can differ from their code-point order. It differs
 * only where, at the first difference, a high surrogate (an astral character's first unit, or a
 * lone one) meets a unit from U+E000..U+FFFF or a lone surrogate: without a high surrogate in
 * any key every unit is its own code point, and well-formed keys without U+E000..U+FFFF are
 * ordered alike by units and by code points. So emoji among ordinary keys (one astral key among
 * 290,000, or a prefix alternating emoji and letters) keep the native sort.
 */
function mayMisorder<T>(items: T[], keyOf: (item: T) => string): boolean {
  let high = false;
  let other = false;
  for (const item of items) {
    const key = keyOf(item);
    if (!high && HIGH.test(key)) high = true;
    if (!other && (ABOVE_SURROGATES.test(key) || !key.isWellFormed())) other = true;
    if (high && other) return true;
  }
  return false;
}

const byUnits = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

const isHigh = (unit: number) => unit >= 0xd800 && unit <= 0xdbff;

/**
 * Code-point order, a lone surrogate being the code point it names: the first differing code point
 * decides. It walks a shared prefix unit by unit in JavaScript, so it is used only where sort keys
 * do not pay.
 */
function compareCodePoints(a: string, b: string): number {
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

/** Code units per key that changes below which comparing in place beats building sort keys. */
const UNITS_PER_CHANGED_KEY = 64;

/**
 * Whether sort keys repay their cost: two rewrites and, for distinct keys, a Map entry for every
 * key that changes (~3 µs each in node), against the comparator's walk over shared prefixes. With
 * short keys that all change (270,000 emoji keys and one U+FF01 key) sort keys took ~1.3 s in node,
 * comparing in place ~0.45 s; with long ones (2,400 keys sharing 2,000 characters) in place took
 * ~0.2-0.33 s, sort keys ~0.04. Keys that stay (ASCII beside one emoji key) cost sort keys nothing.
 */
function sortKeysPay<T>(items: T[], keyOf: (item: T) => string): boolean {
  let units = 0;
  let changing = 0;
  for (const item of items) {
    const key = keyOf(item);
    units += key.length;
    if (NEEDS_KEY.test(key)) changing++;
  }
  return units >= UNITS_PER_CHANGED_KEY * changing;
}

/**
 * Sorts `items` in place by the code-point order of `keyOf(item)`, stably (equal keys keep their
 * order), with the engine's native string comparison on the keys themselves when no key can be
 * misordered by it (the common case: no copy); otherwise natively on sort keys when they pay
 * (long keys), by comparing code points in place when they do not (many short keys that change).
 */
export function sortByCodePoints<T>(items: T[], keyOf: (item: T) => string): T[] {
  if (items.length < 2) return items;
  if (!mayMisorder(items, keyOf)) return items.sort((a, b) => byUnits(keyOf(a), keyOf(b)));
  if (!sortKeysPay(items, keyOf)) return items.sort((a, b) => compareCodePoints(keyOf(a), keyOf(b)));
  const keyed = items.map((item) => ({ item, key: sortKeyOf(keyOf(item)) }));
  keyed.sort((a, b) => byUnits(a.key, b.key));
  for (let i = 0; i < items.length; i++) items[i] = (keyed[i] as (typeof keyed)[number]).item;
  return items;
}

/**
 * `sortByCodePoints(keys, (k) => k)` for distinct strings (an object's keys), without a wrapper
 * object per key: the sort keys themselves are sorted natively, and the few that are not their
 * own key are looked up again (every key that changes holds U+FFFF, no key that stays does).
 * Decoding them with a replace cost a callback per run: in node, 2,400 keys of 690 U+FFFF and
 * one emoji, 0.65 s.
 */
export function sortDistinctByCodePoints(keys: string[]): string[] {
  if (keys.length < 2) return keys;
  if (!mayMisorder(keys, (k) => k)) return keys.sort(byUnits);
  if (!sortKeysPay(keys, (k) => k)) return keys.sort(compareCodePoints);
  const original = new Map<string, string>();
  const sorted = keys.map((key) => {
    if (!NEEDS_KEY.test(key)) return key;
    const sortKey = codePointSortKey(key);
    original.set(sortKey, key);
    return sortKey;
  });
  sorted.sort(byUnits);
  for (let i = 0; i < keys.length; i++) {
    const key = sorted[i] as string;
    keys[i] = original.get(key) ?? key;
  }
  return keys;
}
