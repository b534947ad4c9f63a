/**
 * Latin letters that slugify's transliteration leaves out: @sindresorhus/transliterate has a table
 * for letters such as é, ß, ø and strips the accents of what decomposes (NFD), so a letter with no
 * entry and no decomposition gave nothing ("Ƙasar Ɗan" → "asar-an"). These are all such letters of
 * Latin-1 Supplement to Latin Extended-B (U+00C0–U+024F), IPA Extensions (U+0250–U+02AF, letters
 * of African and Americanist orthographies: ɓ ɗ ɛ ɔ ŋ ʋ ʔ) and Latin Extended Additional
 * (U+1E00–U+1EFF), 221 of them, found by running every letter of those blocks through the library
 * (test/skills/slugify-latin.test.ts). Each is spelled by the base its Unicode name gives
 * (LATIN CAPITAL LETTER ENG → N, O WITH STROKE AND ACUTE → O, AE WITH ACUTE → AE, a digraph by its
 * letters: DZ → dz), else by its sound's usual Latin letter: esh ʃ sh, ezh ʒ zh, open e ɛ e,
 * gamma ɣ g, kra ĸ q (Greenlandic wrote q for it from 1973). Letters with no Latin base have the
 * ASCII their orthographies use: Zhuang's tone letters their digits (ƨ 2, ƽ 5, ƅ 6), the glottal
 * stops 7 (as Salish languages write it), the pharyngeals ʕ ʢ 3 (as Arabic chat writes ʿayn), the
 * clicks as Naro spells them (ǀ c, ǁ x, ǃ q, ǂ tc).
 * Loaded with the slugifier, on the first slugify call of an isolate.
 */
const PAIRS = `
  ĸ:q Ŋ:N ŋ:n Ŧ:T ŧ:t ƀ:b Ɓ:B Ƃ:B ƃ:b Ƅ:6 ƅ:6 Ɔ:O Ƈ:C ƈ:c Ɖ:D Ɗ:D Ƌ:D ƌ:d ƍ:d Ǝ:E Ɛ:E
  Ƒ:F ƒ:f Ɠ:G Ɣ:G ƕ:hv Ɩ:I Ɨ:I Ƙ:K ƙ:k ƚ:l ƛ:l Ɯ:M Ɲ:N ƞ:n Ɵ:O Ƣ:OI ƣ:oi Ƥ:P ƥ:p Ʀ:R
  Ƨ:2 ƨ:2 Ʃ:SH ƪ:sh ƫ:t Ƭ:T ƭ:t Ʈ:T Ʊ:U Ʋ:V Ƴ:Y ƴ:y Ƶ:Z ƶ:z Ʒ:ZH Ƹ:ZH ƹ:zh ƺ:zh ƻ:2
  Ƽ:5 ƽ:5 ƾ:ts ƿ:w ǀ:c ǁ:x ǂ:tc ǃ:q ǝ:e Ǣ:AE ǣ:ae Ǥ:G ǥ:g Ǯ:ZH ǯ:zh Ƕ:HV Ƿ:W Ǽ:AE ǽ:ae
  Ǿ:O ǿ:o Ȝ:Y ȝ:y Ƞ:N ȡ:d Ȣ:OU ȣ:ou Ȥ:Z ȥ:z ȴ:l ȵ:n ȶ:t ȷ:j ȸ:db ȹ:qp Ⱥ:A Ȼ:C ȼ:c Ƚ:L
  Ⱦ:T ȿ:s ɀ:z Ɂ:7 ɂ:7 Ƀ:B Ʉ:U Ʌ:V Ɇ:E ɇ:e Ɉ:J ɉ:j Ɋ:Q ɋ:q Ɍ:R ɍ:r Ɏ:Y ɏ:y ɐ:a ɑ:a ɒ:a
  ɓ:b ɔ:o ɕ:c ɖ:d ɗ:d ɘ:e ɚ:e ɛ:e ɜ:e ɝ:e ɞ:e ɟ:j ɠ:g ɡ:g ɢ:g ɣ:g ɤ:o ɥ:h ɦ:h ɧ:h ɨ:i
  ɩ:i ɪ:i ɫ:l ɬ:l ɭ:l ɮ:lz ɯ:m ɰ:m ɱ:m ɲ:n ɳ:n ɴ:n ɵ:o ɶ:oe ɷ:o ɸ:f ɹ:r ɺ:r ɻ:r ɼ:r
  ɽ:r ɾ:r ɿ:r ʀ:r ʁ:r ʂ:s ʃ:sh ʄ:j ʅ:sh ʆ:sh ʇ:t ʈ:t ʉ:u ʊ:u ʋ:v ʌ:v ʍ:w ʎ:y ʏ:y ʐ:z
  ʑ:z ʒ:zh ʓ:zh ʔ:7 ʕ:3 ʖ:x ʗ:c ʘ:p ʙ:b ʚ:e ʛ:g ʜ:h ʝ:j ʞ:k ʟ:l ʠ:q ʡ:7 ʢ:3 ʣ:dz ʤ:dzh
  ʥ:dz ʦ:ts ʧ:tsh ʨ:tc ʩ:fn ʪ:ls ʫ:lz ʬ:w ʭ:x ʮ:h ʯ:h ẜ:s ẝ:s ẟ:d Ỻ:LL ỻ:ll Ỽ:V ỽ:v
  Ỿ:Y ỿ:y
`;

export const LATIN_BASE: ReadonlyMap<string, string> = new Map(
  PAIRS.trim()
    .split(/\s+/)
    .map((pair) => [pair.slice(0, pair.indexOf(":")), pair.slice(pair.indexOf(":") + 1)] as const),
);

// Every key lies in these blocks (all in the BMP, one UTF-16 unit each).
const CANDIDATES = /[\u0138-\u02af\u1e9c-\u1eff]/g;

/** The text with each letter the slugifier would drop spelled in ASCII; everything else kept. */
export function spellLatinLetters(text: string): string {
  return text.replace(CANDIDATES, (c) => LATIN_BASE.get(c) ?? c);
}
