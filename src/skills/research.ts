import * as z from "zod";
import type { Bindings } from "../env";
import { netConfig } from "../net/config";
import { cut } from "../text-cut";
import { cached, normalizeText } from "./lib/cache";
import { ENGLISH_STOPWORDS, extractKeywords } from "./lib/keywords";
import { searchOrRefuse } from "./lib/search-refused";
import { sentencesOf, stem, wordsOf } from "./lib/text-stats";
import { readExtracts, searchWikipedia, type WpArticle } from "./lib/wikipedia";
import { cacheState, defineSkill } from "./types";

const ARTICLES = 3;
/**
 * Search hits read: a few more than ARTICLES, so that three remain when a disambiguation page or
 * an article without intro text is among them (the extracts are still one request).
 */
const HITS = 5;
const MAX_SENTENCES = 5;
const MAX_SUMMARY_CHARS = 1200;
/** Wikipedia refuses searches longer than 300 characters. */
const MAX_SEARCH_CHARS = 300;
const DUPLICATE_JACCARD = 0.5;
const RELEVANCE_FLOOR = 0.2;

interface Ranked {
  text: string;
  article: number;
  score: number;
  terms: Set<string>;
  words: Set<string>;
}

export interface ResearchResult {
  summary: string;
  sources: { title: string; url: string }[];
  confidence: number;
  sentences: { text: string; source: string; score: number }[];
  total_hits: number;
  note?: string;
}

/** The search string: the query itself, or its keywords when it is longer than Wikipedia allows. */
function searchText(query: string) {
  const q = query.replace(/\s+/g, " ").trim();
  if (q.length <= MAX_SEARCH_CHARS) return q;
  let out = "";
  for (const { term } of extractKeywords(q, 50).keywords) {
    if (out.length + term.length + 1 > MAX_SEARCH_CHARS) break;
    out = out ? `${out} ${term}` : term;
  }
  return out || cut(q, MAX_SEARCH_CHARS);
}

function queryTerms(query: string): string[] {
  const all = wordsOf(query).map(stem);
  const content = all.filter((w) => !ENGLISH_STOPWORDS.has(w) && /\p{L}|\p{N}/u.test(w));
  return [...new Set(content.length > 0 ? content : all)];
}

const jaccard = (a: Set<string>, b: Set<string>) => {
  let inter = 0;
  for (const x of a) if (b.has(x)) inter++;
  return inter / (a.size + b.size - inter || 1);
};

/**
 * Extractive summary: every sentence of the extracts is scored by the idf-weighted share of query
 * terms it contains, ×1.15 for an article's lead sentence and ×(1 − 0.1·rank) for the article's
 * search rank; the best are taken in score order (at most 5, none under a fifth of the best score),
 * skipping near-duplicates (word Jaccard ≥ 0.5).
 */
export function summarize(query: string, articles: WpArticle[]) {
  const terms = queryTerms(query);
  const candidates: Ranked[] = [];
  articles.forEach((a, article) => {
    const cleaned = a.extract.replace(/\s*\(\s*[;,]?\s*\)/g, "");
    sentencesOf(cleaned).forEach((text, i) => {
      const words = wordsOf(text).map(stem);
      if (words.length < 4) return;
      candidates.push({ text, article, score: i === 0 ? 1.15 : 1, terms: new Set(), words: new Set(words) });
    });
  });
  // Inverse document frequency of each term over the candidate sentences.
  const n = candidates.length;
  const idf = new Map(
    terms.map((t) => [t, Math.log(1 + n / (1 + candidates.filter((c) => c.words.has(t)).length))]),
  );
  const totalWeight = [...idf.values()].reduce((a, b) => a + b, 0) || 1;
  for (const c of candidates) {
    let w = 0;
    for (const t of terms) {
      if (c.words.has(t)) {
        c.terms.add(t);
        w += idf.get(t) ?? 0;
      }
    }
    c.score = c.terms.size === 0 ? 0 : (w / totalWeight) * c.score * (1 - 0.1 * c.article);
  }
  const ranked = candidates
    .filter((c) => c.score > 0)
    .sort((a, b) => b.score - a.score || a.article - b.article);
  // Sentences far weaker than the best one dilute the summary.
  const floor = (ranked[0]?.score ?? 0) * RELEVANCE_FLOOR;
  while (ranked.length > 1 && (ranked[ranked.length - 1]?.score ?? 0) < floor) ranked.pop();
  // Nothing mentions the query terms: the top article's lead sentence is the honest fallback.
  const first = candidates.find((c) => c.article === 0);
  if (ranked.length === 0 && first) ranked.push({ ...first, score: 0 });

  const chosen: Ranked[] = [];
  let chars = 0;
  for (const c of ranked) {
    if (chosen.length >= MAX_SENTENCES) break;
    if (chosen.some((s) => jaccard(s.words, c.words) >= DUPLICATE_JACCARD)) continue;
    if (chosen.length > 0 && chars + c.text.length > MAX_SUMMARY_CHARS) continue;
    chosen.push(c);
    chars += c.text.length + 1;
  }

  const covered = new Set(chosen.flatMap((c) => [...c.terms]));
  const coverage = [...covered].reduce((s, t) => s + (idf.get(t) ?? 0), 0) / totalWeight;
  const contributing = new Set(chosen.filter((c) => c.score > 0).map((c) => c.article));
  // Coverage of the query terms by the summary, and agreement of more than one article.
  const confidence = Math.round((0.7 * coverage + 0.3 * Math.min(1, contributing.size / 2)) * 100) / 100;
  return { chosen, confidence, used: [...new Set(chosen.map((c) => c.article))].sort((a, b) => a - b) };
}

/**
 * The summary when no article matched, quoting the query as this caller wrote it. The cached
 * answer holds none: callers whose queries normalize alike ("Ünïcode" and "u\u0308nïcode") share
 * it, and the first one's spelling was shown to the others.
 */
const noMatchSummary = (query: string) =>
  `No Wikipedia article matched "${cut(query.trim(), 200)}"; nothing to summarise. Try fewer or more general terms.`;

/** A query of spaces only: nothing to search, answered as "nothing matched" (Wikipedia refuses an empty search). */
const BLANK: ResearchResult = {
  summary: "The query has no words to search for; nothing to summarise. Give a topic or a question.",
  sources: [],
  confidence: 0,
  sentences: [],
  total_hits: 0,
  note: "empty search result",
};

export async function researchQuery(env: Bindings, query: string): Promise<ResearchResult> {
  const text = searchText(query);
  if (text === "") return BLANK;
  const cfg = netConfig(env);
  // A search Wikipedia refuses as written (a bad `insource:/…/` regex) is a 422 on `query`.
  const { hits, totalHits } = await searchOrRefuse(
    () => searchWikipedia(cfg, text, HITS),
    "query",
    "Wikipedia cannot search this query",
    query,
  );
  const noMatch = (): ResearchResult => ({
    summary: "", // quoted from each caller's own query (research.run): this answer is cached for all
    sources: [],
    confidence: 0,
    sentences: [],
    total_hits: totalHits,
    note: "empty search result",
  });
  // An article with no intro text has nothing to give the summary and would take a rank from one
  // that has.
  const articles = (await readExtracts(cfg, hits)).filter((a) => a.extract.trim() !== "").slice(0, ARTICLES);
  if (articles.length === 0) return noMatch();
  const { chosen, confidence, used } = summarize(query, articles);
  // Intros with no sentence long enough to score (under four words each) summarise nothing either.
  if (chosen.length === 0) return noMatch();
  return {
    summary: chosen.map((c) => c.text).join(" "),
    sources: used.map((i) => ({ title: articles[i]?.title ?? "", url: articles[i]?.url ?? "" })),
    confidence,
    sentences: chosen.map((c) => ({
      text: c.text,
      source: articles[c.article]?.title ?? "",
      score: Math.round(c.score * 1000) / 1000,
    })),
    total_hits: totalHits,
  };
}

/**
 * The query as the cache knows it: case, spacing and composition do not change what Wikipedia finds,
 * except where CirrusSearch matches a keyword's value case-sensitively, and such a query keeps its
 * case (spacing is collapsed before it is sent, so that alone may go): an `insource:/…/` or
 * `intitle:/…/` regex (`/…/i` is not), and `linksto:`, whose page title is matched against an exact
 * keyword field (`outgoing_link`; only the first letter is folded, as MediaWiki titles fold it);
 * `morelike:`/`morelikethis:` and `deepcat:`/`deepcategory:` name exact titles too (the articles
 * looked up by title, MoreLikeTrait::collectTitlesFromDB; the category tree walked from its title,
 * DeepcatFeature::fetchCategories). `incategory:`, `hastemplate:` and `prefix:` match lowercased fields (`category.lowercase_keyword`,
 * `template`, `title.prefix`), so their case does not matter (CirrusSearch's LinksToFeature,
 * InCategoryFeature, HasTemplateFeature, PrefixFeature and its mapping).
 */
const CASE_KEPT = /\b(?:(?:insource|intitle):\s*\/|(?:linksto|morelike|morelikethis|deepcat|deepcategory):)/i;
const cacheKeyOf = (query: string) =>
  CASE_KEPT.test(query) ? ["cased", query.replace(/\s+/g, " ").trim()] : normalizeText(query);

export const research = defineSkill({
  id: "research",
  name: "Research summary",
  category: "research",
  price_usd: 0.015,
  kind: "analytic",
  description:
    "Search English Wikipedia for a question or topic, read the top three articles' intro extracts and return an extractive summary: their sentences ranked by relevance to the query and de-duplicated, with the articles used as sources and a confidence that reflects how much of the query they cover. No invented text.",
  input: () =>
    z.object({
      query: z.string().min(1).max(2000).meta({ description: "Question or topic to research." }),
    }),
  output: () =>
    z.object({
      query: z.string(),
      summary: z.string().meta({ description: "Sentences of the articles, best first; no invented text." }),
      sources: z.array(z.object({ title: z.string(), url: z.string() })),
      confidence: z.number().min(0).max(1),
      sentences: z.array(z.object({ text: z.string(), source: z.string(), score: z.number() })),
      total_hits: z.int().min(0).meta({ description: "Wikipedia search hits." }),
      note: z.string().optional().meta({ description: "Present when nothing matched." }),
      cache: cacheState,
    }),
  example_request: { query: "x402 payment protocol" },
  // A real output of this code for example_request on the fixture upstreams of test/fixtures;
  // a test compares it with a fresh run, so it cannot drift.
  example_response: {
    skill: "research",
    query: "x402 payment protocol",
    summary:
      "The x402 payment protocol proposes such a convention: a server answers 402 with machine-readable payment requirements and the client retries with a signed payment. HTTP 402 Payment Required is a client error status code of the Hypertext Transfer Protocol. The code was reserved in early versions of HTTP for future use by digital payment systems. For a long time no common convention described how a server should state the payment it expects. Card networks charge fixed fees that make very small payments uneconomic.",
    sources: [
      {
        title: "HTTP 402",
        url: "https://en.wikipedia.org/wiki/HTTP_402",
      },
      {
        title: "Micropayment",
        url: "https://en.wikipedia.org/wiki/Micropayment",
      },
    ],
    confidence: 1,
    sentences: [
      {
        text: "The x402 payment protocol proposes such a convention: a server answers 402 with machine-readable payment requirements and the client retries with a signed payment.",
        source: "HTTP 402",
        score: 1,
      },
      {
        text: "HTTP 402 Payment Required is a client error status code of the Hypertext Transfer Protocol.",
        source: "HTTP 402",
        score: 0.68,
      },
      {
        text: "The code was reserved in early versions of HTTP for future use by digital payment systems.",
        source: "HTTP 402",
        score: 0.244,
      },
      {
        text: "For a long time no common convention described how a server should state the payment it expects.",
        source: "HTTP 402",
        score: 0.244,
      },
      {
        text: "Card networks charge fixed fees that make very small payments uneconomic.",
        source: "Micropayment",
        score: 0.219,
      },
    ],
    total_hits: 2,
    cache: "miss",
  },
  async run({ query }, ctx) {
    const { value, cache } = await cached(ctx, "research", cacheKeyOf(query), () =>
      researchQuery(ctx.env, query),
    );
    const { summary, sources, confidence, ...extra } = value;
    return { query, summary: summary || noMatchSummary(query), sources, confidence, ...extra, cache };
  },
});
