// Benchmark-only: how well and how cheaply lib/text-language.ts names a text's language, against
// the approach it replaced (franc on the text's first 512 characters). Run in one node process:
//   npx esbuild scripts/bench/language-accuracy.ts --bundle --platform=node --format=esm \
//     --outfile=/tmp/language-accuracy.mjs && node /tmp/language-accuracy.mjs
import { franc } from "franc";
import { countTerms, rankTerms } from "../../src/skills/lib/keywords";
import { FRANC_CANDIDATES, keywordsInLanguage, textLanguage } from "../../src/skills/lib/text-language";
import { ENGLISH_NOUN_LISTS, GERMAN_LOANWORD_LISTING } from "../../test/fixtures/english-noun-lists";
import { PARAGRAPHS } from "../../test/fixtures/language-samples";

/** Short English, 20-50 characters: what franc alone mislabelled. */
const PHRASES = [
  "Machine learning models need training data.",
  "Open source license compliance checklist",
  "How to reset your password",
  "Quarterly revenue grew by twelve percent.",
  "Best hiking trails near Denver",
  "The meeting has been moved to Friday.",
  "Install the package and run the tests.",
  "Fresh bread baked every morning",
  "Customer support is available all day.",
  "Please confirm your email address.",
  "Weather forecast for the weekend",
  "Shipping is free on orders over fifty dollars",
  "Click here to download the report",
  "Our team won the regional championship.",
  "Terms of service and privacy policy",
];

/** The replaced approach, as it was (franc's codes mapped to the lists' as LIST_OF maps them). */
const MAP: Record<string, string> = { arb: "ara", cmn: "zho" };
const oldLanguage = (text: string) => {
  const code = franc(text.slice(0, 512), { only: FRANC_CANDIDATES, minLength: 20 });
  return MAP[code] ?? code;
};

function windows(text: string, size: number) {
  const out: string[] = [];
  for (let at = 0; at + size <= text.length; at += size / 2) out.push(text.slice(at, at + size));
  return out;
}

function accuracy(name: string, detect: (t: string) => string) {
  let whole = 0;
  let right = 0;
  let und = 0;
  let wrong = 0;
  const misses: string[] = [];
  for (const [lang, text] of Object.entries(PARAGRAPHS)) {
    const got = detect(text);
    if (got === lang) whole++;
    else misses.push(`${lang}->${got}`);
    for (const size of [64, 128, 256]) {
      for (const w of windows(text, size)) {
        const got = detect(w);
        if (got === lang) right++;
        else {
          misses.push(`${lang}${size}->${got}`);
          if (got === "und") und++;
          else wrong++;
        }
      }
    }
  }
  const phrases = PHRASES.map(detect);
  const eng = phrases.filter((l) => l === "eng").length;
  const pUnd = phrases.filter((l) => l === "und").length;
  console.log(
    `${name}: paragraphs ${whole}/14; windows right ${right}, und ${und}, wrong ${wrong} of ${right + und + wrong}; ` +
      `phrases eng ${eng}, und ${pUnd}, wrong ${15 - eng - pUnd} (${phrases.join(" ")}); misses ${misses.join(" ")}`,
  );
}

/** Per call, the median of 9 rounds run in turn with the other variants (the machine is shared). */
function perCall(text: string, variants: Record<string, () => unknown>) {
  const runs = text.length > 10_000 ? 10 : 500;
  const times = Object.fromEntries(Object.keys(variants).map((name) => [name, [] as number[]]));
  for (let round = 0; round < 10; round++) {
    for (const [name, f] of Object.entries(variants)) {
      const t = performance.now();
      for (let i = 0; i < runs; i++) f();
      // The first round warms the code up and is not counted.
      if (round > 0) times[name]?.push((performance.now() - t) / runs);
    }
  }
  for (const [name, ts] of Object.entries(times)) {
    ts.sort((a, b) => a - b);
    console.log(`  ${name}: ${ts[4]?.toFixed(3)} ms (${ts[0]?.toFixed(3)}-${ts[8]?.toFixed(3)})`);
  }
}

const t0 = performance.now();
textLanguage("warm the index");
console.log(`index built: ${(performance.now() - t0).toFixed(1)} ms`);
accuracy("franc-512", oldLanguage);
accuracy("coverage", (t) => textLanguage(t).language);

/** Stopword-poor English: what it is named, whether it is clear, and lists that lost a non-English-stopword word. */
function nounLists() {
  const named = ENGLISH_NOUN_LISTS.map((t) => textLanguage(t));
  const lostWords = ENGLISH_NOUN_LISTS.filter(
    (t) => keywordsInLanguage(t, 50).keywords.length < rankTerms(countTerms(t), 50).keywords.length,
  ).length;
  const german = textLanguage(GERMAN_LOANWORD_LISTING);
  console.log(
    `noun lists (${named.length}): eng clear ${named.filter((r) => r.language === "eng" && r.clear).length}, ` +
      `eng not clear ${named.filter((r) => r.language === "eng" && !r.clear).length}, ` +
      `und ${named.filter((r) => r.language === "und").length}, ` +
      `other clear ${named.filter((r) => r.language !== "eng" && r.language !== "und" && r.clear).length}, ` +
      `other not clear ${named.filter((r) => r.language !== "eng" && r.language !== "und" && !r.clear).length}; ` +
      `words lost in ${lostWords}; German loanword listing ${german.language} clear=${german.clear}`,
  );
}
nounLists();

const kb = PARAGRAPHS.eng.repeat(3).slice(0, 1024);
const big = `${PARAGRAPHS.eng} ${PARAGRAPHS.fra} `.repeat(200).slice(0, 200_000);
for (const [label, text] of [
  ["1 KB", kb],
  ["200k", big],
] as const) {
  console.log(`keyword_extract ${label}:`);
  perCall(text, {
    "English stopwords only (before detection)": () => rankTerms(countTerms(text), 20),
    // The set of the language's stopwords is built once per language: the same lookup either way.
    "franc-512": () => [oldLanguage(text), rankTerms(countTerms(text), 20)],
    coverage: () => keywordsInLanguage(text, 20),
  });
}
