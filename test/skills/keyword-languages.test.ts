import * as stopwordLists from "stopword";
import { describe, expect, it } from "vitest";
import { countTerms, rankTerms } from "../../src/skills/lib/keywords";
import { audit } from "../../src/skills/lib/seo-audit";
import { keywordsInLanguage, textLanguage } from "../../src/skills/lib/text-language";
import { ENGLISH_NOUN_LISTS, GERMAN_LOANWORD_LISTING } from "../fixtures/english-noun-lists";
import { PARAGRAPHS, type SampleLanguage } from "../fixtures/language-samples";
// @ts-expect-error plain JS fixture data
import { pages } from "../fixtures/upstream-data.mjs";
import { FIXTURE } from "../fixtures/upstream-requests";
import { postJson } from "../helpers";

/**
 * The text skills for text that is not English. keyword_extract removed English stopwords only,
 * so a French paragraph's top keywords were "la", "de", "bibliothèque", "et", "le", a Russian
 * one's "в", "и", a Japanese one's "の", "に", "が", "は"; seo's extracted keywords the same; and
 * ai_detector read every non-English paragraph as machine-written for lacking English
 * contractions and pronouns (Spanish 0.72 "likely_ai").
 */

interface Keywords {
  keywords: { term: string; count: number }[];
  language: string;
}

async function extract(text: string, limit = 5): Promise<Keywords> {
  const res = await postJson("/api/skills/keyword-extract", { text, limit });
  expect(res.status).toBe(200);
  return res.json();
}

const lists = stopwordLists as unknown as Record<string, string[]>;
const stopwordsOf = (lang: SampleLanguage) => new Set(lists[lang]);

/** Each paragraph's subject, the library, as the language spells it in the nominative. */
const LIBRARY: Partial<Record<SampleLanguage, string>> = {
  eng: "library",
  fra: "bibliothèque",
  deu: "bibliothek",
  spa: "biblioteca",
  por: "biblioteca",
  ita: "biblioteca",
  nld: "bibliotheek",
  rus: "библиотека",
  pol: "biblioteka",
  jpn: "図書館",
  ara: "المكتبة",
  hin: "पुस्तकालय",
};

describe("keyword_extract removes the stopwords of the text's own language", () => {
  for (const lang of Object.keys(PARAGRAPHS) as SampleLanguage[]) {
    it(`${lang}: names the language and ranks no ${lang} stopword in the top five`, async () => {
      const r = await extract(PARAGRAPHS[lang]);
      expect(r.language).toBe(lang);
      const stop = stopwordsOf(lang);
      expect(r.keywords.filter(({ term }) => stop.has(term))).toEqual([]);
      if (LIBRARY[lang] !== undefined) expect(r.keywords[0]?.term).toBe(LIBRARY[lang]);
    });
  }

  it.each([
    ["cat", "La nova biblioteca va obrir les portes dilluns a l'antic ajuntament, amb vint mil llibres."],
    ["dan", "Det nye bibliotek åbnede mandag i det gamle rådhus, og det har mere end tyve tusind bøger."],
    [
      "fin",
      "Uusi kirjasto avattiin maanantaina vanhassa raatihuoneessa, ja siellä on yli kaksikymmentätuhatta kirjaa.",
    ],
  ])("tells %s from its neighbours (a smaller detector has no profile for it)", async (lang, text) => {
    const r = await extract(text, 50);
    expect(r.language).toBe(lang);
    expect(r.keywords.filter(({ term }) => lists[lang]?.includes(term))).toEqual([]);
  });

  it("keyword_extract names a language no list covers und (franc is not asked: test/scripts/franc-windows.test.ts)", async () => {
    // Hebrew's words carry their prefixes (ה, ב, ו), so no list covers this text: franc names it
    // for ai_detector, but keyword_extract, whose stopwords it could not change, does not ask
    // (~1 ms a 512-character window on stopword-poor Latin text).
    const hebrew = "הספרייה החדשה נפתחה ביום שני בבניין העירייה הישן, ויש בה יותר מעשרים אלף ספרים.";
    expect(textLanguage(hebrew).language).toBe("heb");
    expect((await extract(hebrew, 50)).language).toBe("und");
  });

  it("removes English stopwords too in another language's text (quoted English)", async () => {
    const text = `${PARAGRAPHS.fra} Le slogan dit « the library for the people and the town ».`;
    const r = await extract(text, 50);
    expect(r.language).toBe("fra");
    expect(r.keywords.map((k) => k.term)).not.toContain("the");
    expect(r.keywords.map((k) => k.term)).toContain("library");
  });

  // The language was read from the text's first 512 characters: these answered "eng" and ranked
  // la, de, bibliothèque, et, le; then "fra" for 190,000 characters of English.
  it("names the language most of the text is in, not its opening's", async () => {
    const french = await extract(`${PARAGRAPHS.eng} ${PARAGRAPHS.fra.repeat(10)}`, 5);
    expect(french.language).toBe("fra");
    expect(french.keywords.filter(({ term }) => stopwordsOf("fra").has(term))).toEqual([]);
    expect(french.keywords[0]?.term).toBe("bibliothèque");
    const english = await extract(`${PARAGRAPHS.fra} ${PARAGRAPHS.eng.repeat(500)}`.slice(0, 200_000), 3);
    expect(english.language).toBe("eng");
    expect(english.keywords[0]?.term).toBe("library");
  });

  it("says und for short English it cannot tell, never another language", async () => {
    // franc alone named 7 of 15 such phrases cat, fra, sot, epo or afr.
    const phrases = [
      "Machine learning models need training data.",
      "Open source license compliance checklist",
      "Quarterly revenue grew by twelve percent.",
      "Best hiking trails near Denver",
      "Fresh bread baked every morning",
      "Please confirm your email address.",
      "Weather forecast for the weekend",
      "Shipping is free on orders over fifty dollars",
      "The meeting has been moved to Friday.",
      "Click here to download the report",
    ];
    const languages = await Promise.all(phrases.map(async (p) => (await extract(p)).language));
    expect(languages.filter((l) => l !== "eng" && l !== "und")).toEqual([]);
    expect(languages.filter((l) => l === "eng").length).toBeGreaterThan(0);
  });

  it("says und for text too short to tell and removes English stopwords only", async () => {
    // franc alone read this as Esperanto, and "Guten Morgen" as Norwegian.
    expect(await extract("Hola, ¿cómo estás?")).toMatchObject({
      language: "und",
      keywords: [
        { term: "cómo", count: 1 },
        { term: "estás", count: 1 },
        { term: "hola", count: 1 },
      ],
    });
    expect((await extract("the cat and the hat")).keywords.map((k) => k.term)).toEqual(["cat", "hat"]);
  });
});

describe("stopword-poor English keeps its words", () => {
  // Danish's list covered "fire" and "store" (4 of 19 tokens, English's none) and won; franc named
  // such lists Danish, French or Dutch, "clear", and their stopwords were removed.
  it("keyword_extract keeps fire and store in English noun lists", async () => {
    for (const text of ENGLISH_NOUN_LISTS.slice(0, 2)) {
      const terms = (await extract(text, 50)).keywords.map((k) => k.term);
      expect(terms).toEqual(expect.arrayContaining(["fire", "store"]));
    }
  });

  it("never reads an English noun list as clearly another language, nor removes another list's words", () => {
    for (const text of ENGLISH_NOUN_LISTS) {
      const read = textLanguage(text);
      expect({ text, clear: read.clear && read.language !== "eng" }).toEqual({ text, clear: false });
      expect(keywordsInLanguage(text, 50).keywords).toEqual(rankTerms(countTerms(text), 50).keywords);
    }
  });

  // "for", "at", "under" are Danish stopwords too: counted for Danish, they gave it its third
  // distinct term, and these read "dan", clear, with fire, store and men removed.
  it.each([
    [
      "Fire station store: fire trucks, fire hoses, store rooms, and ladders for the crew and the chief",
      ["fire", "store"],
    ],
    [
      "Men's store: fire sale on coats, boots and hats for men. Store credit for returns, fire sale ends at nine.",
      ["men", "store", "fire"],
    ],
    [
      "Store hours for the fire sale: the store opens at nine, the fire sale ends under the clock.",
      ["store", "fire"],
    ],
    ["Fire hoses, fire doors, fire alarms and store shelves for the store", ["fire", "store"]],
    ["Fire extinguishers for sale at the store: fire blankets, fire hoses", ["fire", "store"]],
  ])("a word English shares with another list is no evidence against English: %s", async (text, kept) => {
    expect(textLanguage(text)).not.toMatchObject({ language: "dan", clear: true });
    const r = await extract(text, 50);
    expect(r.language).not.toBe("dan");
    expect(r.keywords.map((k) => k.term)).toEqual(expect.arrayContaining(kept));
  });

  // Counted for English alone, Afrikaans' is, in, my, was, by turned it "eng", clear: judged by
  // ai_detector's English signals (0.609) and its die, en, dit ranked as keywords.
  it.each([
    "My kat is in die kombuis en my hond is in die tuin.",
    "In my tyd was dit anders; ek was jonk en my pa was by die myn.",
    "In my kinderjare was ons huis in die Karoo. My pa was by die spoorweë en my ma was in die skool by die kinders. Dit is in my geheue soos 'n foto: die stoep, die windpomp en die stof op die pad.",
  ])("Afrikaans, whose common words English's list holds too, is never read as English: %s", (text) => {
    expect(textLanguage(text).language).not.toBe("eng");
  });

  it("English phrases are not clearly another language through shared short words", () => {
    for (const text of ["a backreference to nothing in u mode", "%s is a body its skill accepts"]) {
      const read = textLanguage(text);
      expect({ text, clear: read.clear && read.language !== "eng" }).toEqual({ text, clear: false });
    }
  });

  it("a German listing of English loanwords is not clearly English", () => {
    expect(textLanguage(GERMAN_LOANWORD_LISTING)).toMatchObject({ clear: false });
  });
});

describe("seo extracts a page's keywords without its language's stopwords", () => {
  it("a French page's extracted keywords are French content words", () => {
    const page = `<!doctype html><html lang="en"><head><title>La nouvelle bibliothèque</title></head>
<body><h1>La bibliothèque de la ville</h1><p>${PARAGRAPHS.fra}</p></body></html>`;
    const result = audit(page, "https://example.test/", null, null, keywordsInLanguage) as {
      keywords: string[];
    };
    expect(result.keywords.filter((k) => stopwordsOf("fra").has(k))).toEqual([]);
    expect(result.keywords[0]).toBe("bibliothèque");
  });
});

describe("seo extracts a fetched page's keywords in the page's language", () => {
  it("a French page under lang=en: French content words, no French stopwords", async () => {
    const res = await postJson("/api/skills/seo", { url: `${FIXTURE}/pages/fr.html`, keywords: null });
    expect(res.status).toBe(200);
    const { keywords } = await res.json<{ keywords: string[] }>();
    expect(keywords.filter((k) => stopwordsOf("fra").has(k))).toEqual([]);
    expect(keywords[0]).toBe("bibliothèque");
  });
});

describe("ai_detector judges English prose only and says which language it read", () => {
  const detect = async (text: string) => {
    const res = await postJson("/api/skills/ai-detector", { text });
    expect(res.status).toBe(200);
    return res.json<{
      language: string;
      verdict: string;
      ai_likelihood: number;
      signals: { sentences: number; words: number };
    }>();
  };

  for (const lang of ["fra", "spa", "deu", "rus", "jpn", "ara", "hin"] as const) {
    it(`${lang}: measured but not judged (0.5, uncertain)`, async () => {
      const r = await detect(PARAGRAPHS[lang]);
      expect(r).toMatchObject({ language: lang, verdict: "uncertain", ai_likelihood: 0.5 });
      expect(r.signals.words).toBeGreaterThan(40);
    });
  }

  it("splits sentences at 。 ؟ and । as at a full stop", async () => {
    expect((await detect(PARAGRAPHS.jpn)).signals.sentences).toBe(4);
    expect((await detect(PARAGRAPHS.zho)).signals.sentences).toBe(4);
    expect((await detect(PARAGRAPHS.ara)).signals.sentences).toBe(5);
    expect((await detect(PARAGRAPHS.hin)).signals.sentences).toBe(4);
  });

  /** Machine-like English prose (the ai.html fixture page's text): likely_ai on its own. */
  const aiProse = pages("")
    ["ai.html"].replace(/<[^>]+>/g, " ")
    .replace(/\s+/g, " ")
    .trim();

  // The language was read from the first 512 characters of the text: a French sentence in front
  // of English prose made it "uncertain", English in front of other languages judged it as English.
  it("judges by the language most of the text is in, not its opening's", async () => {
    expect(await detect(aiProse)).toMatchObject({ language: "eng", verdict: "likely_ai" });
    const frenchFirst = await detect(`${PARAGRAPHS.fra.slice(0, 200)} ${aiProse}`);
    expect(frenchFirst).toMatchObject({ language: "eng", verdict: "likely_ai" });
    for (const mixed of [
      `${PARAGRAPHS.eng} ${PARAGRAPHS.fra} ${PARAGRAPHS.spa} ${PARAGRAPHS.ita}`,
      `${"Home | About us | Our services | Pricing | Blog | Contact us | Log in | Sign up for the newsletter | ".repeat(6)}${PARAGRAPHS.fra.repeat(2)}`,
    ]) {
      expect(await detect(mixed)).toMatchObject({ verdict: "uncertain", ai_likelihood: 0.5 });
    }
  });

  // Judged only when the English stopword list covered 15% of the words: terse machine-written
  // English (0.933 likely_ai before) was "uncertain", 0.5.
  it("judges stopword-poor English that franc reads as English in every window", async () => {
    const listicle =
      "Remote work benefits: flexibility, productivity, savings. Companies gain access, reduce overhead, improve retention. Employees enjoy autonomy, balance, comfort.";
    const r = await detect([listicle, listicle, listicle].join(" "));
    expect(r).toMatchObject({ language: "eng", verdict: "likely_ai" });
    expect(r.ai_likelihood).toBeGreaterThan(0.6);
  });

  it("still judges English: the English paragraph keeps its computed likelihood", async () => {
    const r = await detect(PARAGRAPHS.eng);
    expect(r.language).toBe("eng");
    expect(r.ai_likelihood).not.toBe(0.5);
  });
});
