import { isRecord } from "../../is-record";
import type { NetConfig } from "../../net/config";
import { fetchApiJson, isSearchTextError } from "../../net/fetcher";

/** The slice of the Wikidata Action API that osint_graph reads (wbsearchentities, wbgetentities). */

export interface WdSearchHit {
  id: string;
  label: string;
  description: string;
  matchType: string;
  matchText: string;
}

export interface WdStatement {
  target: string;
  rank: "preferred" | "normal";
  ended: boolean;
}

export interface WdEntity {
  id: string;
  label?: string;
  description?: string;
  /** Item-valued statements by property; absent when only labels were asked for. */
  claims?: Record<string, WdStatement[]>;
}

/** wbgetentities takes at most 50 ids per call. */
const BATCH = 50;

/**
 * An item id Wikibase can parse (its ItemId: Q, no leading zero, at most 2147483647). wbgetentities
 * refuses a whole request with `no-such-entity` at the first id it cannot parse, so such an id is
 * never sent: it is an item Wikidata does not have, like an unused id in range.
 */
export const isItemId = (id: string) => /^Q[1-9]\d{0,9}$/.test(id) && Number(id.slice(1)) <= 2_147_483_647;

export class WikidataClient {
  requests = 0;
  /**
   * Ids read that Wikidata redirects, each to the item it was merged into: wbgetentities answers
   * an old id under the id asked, with the item it is now (`{"Q53265341": {"id": "Q11036",
   * "redirects": {"from": "Q53265341", "to": "Q11036"}, …}}`), and statements may still name it.
   */
  readonly redirects = new Map<string, string>();

  constructor(
    private readonly cfg: NetConfig,
    private readonly maxRequests: number,
  ) {}

  get exhausted() {
    return this.requests >= this.maxRequests;
  }

  private get(params: Record<string, string>, callerFault?: (code: string) => boolean) {
    this.requests++;
    return fetchApiJson(this.cfg.wikidataApi, { ...params, format: "json" }, this.cfg, "Wikidata", {
      callerFault,
    });
  }

  /** The id an item has now: `id` itself unless a read found it merged into another. */
  canonical(id: string) {
    return this.redirects.get(id) ?? id;
  }

  /** Entity page of an id, on the configured Wikidata host. */
  entityUrl(id: string) {
    return `${new URL(this.cfg.wikidataApi).origin}/wiki/${id}`;
  }

  /** Items matching `text`; a search Wikidata refuses as written throws ApiRefusedInput (the caller's text). */
  async search(text: string, limit = 5): Promise<WdSearchHit[]> {
    const body = (await this.get(
      {
        action: "wbsearchentities",
        search: text,
        language: "en",
        uselang: "en",
        type: "item",
        limit: String(limit),
      },
      isSearchTextError,
    )) as { search?: unknown[] };
    const hits: WdSearchHit[] = [];
    // Upstream JSON is read defensively: an entry of the wrong shape is skipped, never a 500.
    for (const h of Array.isArray(body.search) ? body.search : []) {
      if (!isRecord(h) || typeof h.id !== "string" || !isItemId(h.id)) continue;
      const match = isRecord(h.match) ? h.match : {};
      hits.push({
        id: h.id,
        label: typeof h.label === "string" ? h.label : h.id,
        description: typeof h.description === "string" ? h.description : "",
        matchType: typeof match.type === "string" ? match.type : "",
        matchText: typeof match.text === "string" ? match.text : "",
      });
    }
    return hits;
  }

  /**
   * Labels and descriptions (and item-valued claims when `withClaims`) of `ids`, in batches, keyed
   * by each entity's own id; an id asked that redirects maps to the same entity too (and is noted
   * in `redirects`), so a caller finds what it asked for. Stops early when the request budget is
   * spent: callers see the missing ids as not fetched.
   */
  async entities(wanted: string[], withClaims: boolean): Promise<Map<string, WdEntity>> {
    const out = new Map<string, WdEntity>();
    const ids = wanted.filter(isItemId);
    for (let i = 0; i < ids.length; i += BATCH) {
      if (this.exhausted) break;
      const body = (await this.get({
        action: "wbgetentities",
        ids: ids.slice(i, i + BATCH).join("|"),
        props: withClaims ? "labels|descriptions|claims" : "labels|descriptions",
        languages: "en",
        // Many items (most people's) hold their name only under "mul" (WD:MUL), which languages=en
        // alone drops: with the fallback, labels.en is that term ({language: "mul", for-language:
        // "en", value}) when there is no en one. wbsearchentities falls back by default (it has no
        // such parameter; its strictlanguage, a boolean present-means-true, is never sent).
        languagefallback: "1",
      })) as { entities?: Record<string, unknown> };
      for (const [asked, e] of Object.entries(isRecord(body.entities) ? body.entities : {})) {
        if (!isRecord(e) || "missing" in e) continue;
        const id = typeof e.id === "string" && isItemId(e.id) ? e.id : asked;
        const entity = parseEntity(id, e, withClaims);
        out.set(id, entity);
        if (asked !== id) {
          this.redirects.set(asked, id);
          out.set(asked, entity);
        }
      }
    }
    return out;
  }
}

function parseEntity(id: string, e: Record<string, unknown>, withClaims: boolean): WdEntity {
  // The en term, or with languagefallback the one its fallback chain found (mul's): same place.
  const text = (field: unknown) => {
    const v = (field as Record<string, { value?: unknown }> | undefined)?.en?.value;
    return typeof v === "string" ? v : undefined;
  };
  const entity: WdEntity = { id, label: text(e.labels), description: text(e.descriptions) };
  if (!withClaims) return entity;
  const claims: Record<string, WdStatement[]> = {};
  for (const [property, list] of Object.entries((e.claims ?? {}) as Record<string, unknown>)) {
    if (!Array.isArray(list)) continue;
    const statements: WdStatement[] = [];
    for (const raw of list) {
      if (!isRecord(raw)) continue;
      const st = raw as {
        rank?: string;
        mainsnak?: { snaktype?: string; datavalue?: { type?: string; value?: { id?: unknown } } };
        qualifiers?: Record<string, unknown>;
      };
      if (st.rank === "deprecated") continue;
      const snak = st.mainsnak;
      if (snak?.snaktype !== "value" || snak.datavalue?.type !== "wikibase-entityid") continue;
      const target = snak.datavalue.value?.id;
      if (typeof target !== "string" || !isItemId(target)) continue;
      statements.push({
        target,
        rank: st.rank === "preferred" ? "preferred" : "normal",
        // P582 "end time": the relation held in the past.
        ended: isRecord(st.qualifiers) && "P582" in st.qualifiers,
      });
    }
    if (statements.length > 0) claims[property] = statements;
  }
  entity.claims = claims;
  return entity;
}
