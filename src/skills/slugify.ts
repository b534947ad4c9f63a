import * as z from "zod";
import { defineSkill } from "./types";

// @sindresorhus/transliterate builds its replacement Maps when its module is evaluated (~30 ms of
// start-up, docs/PERFORMANCE.md): the library loads on the first slugify call of an isolate.
// It has no tables for Han, kana, Hangul, Hebrew, the Indic scripts or Thai, and the description
// says so. A romanizer that covers them (any-ascii: 218 KB gzip, +30% of the Worker's bundle,
// ~10 ms to load) reads Japanese kanji as Mandarin (日本語 "riben-yu"), so none is added. Latin
// letters it has no table for and cannot decompose (ŋ ɓ ɗ ƙ ɛ ɔ ǿ …) are spelled first by a small
// table of our own (lib/latin-letters.ts), loaded with it.
let slugifyText: ((text: string) => string) | undefined;

async function loadSlugify(): Promise<(text: string) => string> {
  const [{ default: slugifyLib }, { spellLatinLetters }] = await Promise.all([
    import("@sindresorhus/slugify"),
    import("./lib/latin-letters"),
  ]);
  return (text) =>
    slugifyLib(spellLatinLetters(text), { separator: "-", lowercase: true, decamelize: false });
}

/** Cuts at a word boundary when one exists inside the limit, and never leaves a trailing "-". */
export function limitSlug(slug: string, maxLen: number): string {
  if (slug.length <= maxLen) return slug;
  let cut = slug.slice(0, maxLen);
  if (slug[maxLen] !== "-" && cut.includes("-")) cut = cut.slice(0, cut.lastIndexOf("-"));
  return cut.replace(/-+$/, "");
}

export const slugify = defineSkill({
  id: "slugify",
  name: "Slugify",
  category: "text_ops",
  price_usd: 0.003,
  kind: "utility",
  // Latin-1 characters only: the 402's bazaar extension echoes it, and a payer that encodes its
  // payment with btoa (Cloudflare Agents' withX402Client) cannot carry ŋ or ɛ.
  description:
    "Turn text into a URL-safe lowercase slug: transliterate Latin, Greek, Cyrillic, Armenian, Georgian, Arabic and Thaana letters (é to e, ß to ss, ø to o), join words with '-', never end in '-', at most max_len characters, cut at a word boundary when possible. Other scripts (Chinese, Japanese, Korean, Hebrew, Indic, Thai) have no table and leave nothing: says so with empty. Deterministic and offline.",
  input: () =>
    z.object({
      text: z.string().max(4000).meta({ description: "Text to slugify." }),
      max_len: z.int().min(1).max(200).default(80).meta({ description: "Maximum slug length." }),
    }),
  output: () =>
    z.object({
      slug: z
        .string()
        .max(200)
        .regex(/^(?:[a-z0-9]+(?:-[a-z0-9]+)*)?$/),
      chars: z.int().min(0),
      empty: z.boolean().meta({ description: "True when nothing of the text survived." }),
    }),
  example_request: { text: "Crème Brûlée: Straße & Smørrebrød!", max_len: 80 },
  example_response: {
    skill: "slugify",
    ok: true,
    slug: "creme-brulee-strasse-and-smorrebrod",
    chars: 35,
    empty: false,
  },
  async run({ text, max_len }) {
    slugifyText ??= await loadSlugify();
    // Compatibility forms first (NFKC): a PDF's "ﬁ" ligature is "fi", "Ⅻ" "XII", a full-width
    // "Ａ" "A"; the slugifier knows none of them and dropped them.
    const slug = limitSlug(slugifyText(text.normalize("NFKC")), max_len);
    return { slug, chars: slug.length, empty: slug.length === 0 };
  },
});
