import type { Bindings } from "../../env";
import { InputError } from "../../http/validation";
import { netConfig } from "../../net/config";
import {
  ContentTypeRefused,
  type FetchedDoc,
  fetchPublic,
  literalRefusal,
  parseTarget,
  UrlRefused,
} from "../../net/fetcher";

/** Caller-supplied URLs of seo and ai_detector: every refusal is a 422 on the request's `url`. */

const refused = (raw: string, reason: string) =>
  InputError.at(["url"], `URL refused: ${reason}`, raw, "url_refused", { reason });

/** Checks what can be checked without the network (scheme, userinfo, literal hosts); the cache key. */
export function precheckUrl(env: Bindings, raw: string): URL {
  try {
    const url = parseTarget(raw);
    const literal = literalRefusal(url, netConfig(env));
    if (literal) throw new UrlRefused(literal);
    url.hash = "";
    return url;
  } catch (e) {
    if (e instanceof UrlRefused) throw refused(raw, e.reason);
    throw e;
  }
}

/**
 * Fetches a page through the SSRF-guarded fetcher, refusing content types not in `kinds` from the
 * response's headers, before its body is read (a page that names no type is read).
 */
export async function loadPage(
  env: Bindings,
  raw: string,
  kinds: RegExp,
  kindName: string,
): Promise<FetchedDoc> {
  try {
    return await fetchPublic(
      raw,
      netConfig(env),
      "text/html,application/xhtml+xml;q=0.9,text/plain;q=0.5",
      (type) => kinds.test(type),
    );
  } catch (e) {
    if (e instanceof UrlRefused) throw refused(raw, e.reason);
    if (e instanceof ContentTypeRefused)
      throw InputError.at(["url"], `the URL serves ${e.type}, not ${kindName}`, raw, "url_content_type", {
        content_type: e.type,
      });
    throw e;
  }
}

export const isHtml = (doc: FetchedDoc) => {
  const type = doc.contentType.split(";")[0]?.trim().toLowerCase() ?? "";
  return type === "" ? /^\s*</.test(doc.text) : /html|xml/.test(type);
};
