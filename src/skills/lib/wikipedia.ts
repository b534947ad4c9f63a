import { isRecord } from "../../is-record";
import type { NetConfig } from "../../net/config";
import { fetchApiJson, isSearchTextError } from "../../net/fetcher";

/** The slice of the Wikipedia Action API that research reads: list=search, then TextExtracts. */

export interface WpHit {
  pageid: number;
  title: string;
}
export interface WpArticle extends WpHit {
  url: string;
  extract: string;
}

/**
 * Top hits of a full-text search. A search CirrusSearch cannot read as written (an empty one, a bad
 * `insource:/…/` regex) throws ApiRefusedInput: the caller's text, not a Wikipedia failure.
 */
export async function searchWikipedia(cfg: NetConfig, query: string, limit: number) {
  const body = (await fetchApiJson(
    cfg.wikipediaApi,
    {
      action: "query",
      list: "search",
      srsearch: query,
      srlimit: String(limit),
      srprop: "snippet",
      format: "json",
      formatversion: "2",
    },
    cfg,
    "Wikipedia",
    { callerFault: isSearchTextError },
  )) as { query?: { search?: unknown[]; searchinfo?: { totalhits?: unknown } } };
  const hits: WpHit[] = [];
  // Upstream JSON is read defensively: an entry of the wrong shape is skipped, never a 500.
  const answer = isRecord(body.query) ? body.query : {};
  for (const h of Array.isArray(answer.search) ? answer.search : []) {
    if (isRecord(h) && typeof h.pageid === "number" && typeof h.title === "string")
      hits.push({ pageid: h.pageid, title: h.title });
  }
  const total = isRecord(answer.searchinfo) ? answer.searchinfo.totalhits : undefined;
  return { hits, totalHits: typeof total === "number" ? total : hits.length };
}

/**
 * Plain-text intro extracts of `hits`, returned in the order of `hits` (the search rank).
 * Disambiguation pages are left out: their "intro" is a list of meanings ("Mercury commonly refers
 * to: …"), which no summary should quote, and search ranks them first for a bare ambiguous name.
 */
export async function readExtracts(cfg: NetConfig, hits: WpHit[]): Promise<WpArticle[]> {
  if (hits.length === 0) return [];
  const body = (await fetchApiJson(
    cfg.wikipediaApi,
    {
      action: "query",
      // pageprops (only the one asked) marks a disambiguation page: `{"disambiguation": ""}`.
      prop: "extracts|info|pageprops",
      ppprop: "disambiguation",
      inprop: "url",
      exintro: "1",
      explaintext: "1",
      exsectionformat: "plain",
      exlimit: String(hits.length),
      pageids: hits.map((h) => h.pageid).join("|"),
      format: "json",
      formatversion: "2",
    },
    cfg,
    "Wikipedia",
  )) as { query?: { pages?: unknown } };
  const raw = isRecord(body.query) ? body.query.pages : undefined;
  const list = (Array.isArray(raw) ? raw : isRecord(raw) ? Object.values(raw) : []).filter(isRecord);
  const byId = new Map(list.map((p) => [p.pageid, p]));
  const origin = new URL(cfg.wikipediaApi).origin;
  const out: WpArticle[] = [];
  for (const hit of hits) {
    const p = byId.get(hit.pageid);
    if (!p || "missing" in p || typeof p.extract !== "string") continue;
    if (isRecord(p.pageprops) && "disambiguation" in p.pageprops) continue;
    const title = typeof p.title === "string" ? p.title : hit.title;
    const url =
      typeof p.fullurl === "string"
        ? p.fullurl
        : `${origin}/wiki/${encodeURIComponent(title.replaceAll(" ", "_"))}`;
    out.push({ pageid: hit.pageid, title, url, extract: p.extract });
  }
  return out;
}
