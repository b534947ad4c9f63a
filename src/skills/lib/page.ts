import type { Bindings } from "../../env";
import { InputError } from "../../http/validation";
import { netConfig } from "../../net/config";
import { type FetchedDoc, fetchPublic, literalRefusal, parseTarget, UrlRefused } from "../../net/fetcher";

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

/** Fetches a page through the SSRF-guarded fetcher, refusing content types not in `kinds`. */
export async function loadPage(
  env: Bindings,
  raw: string,
  kinds: RegExp,
  kindName: string,
): Promise<FetchedDoc> {
  let doc: FetchedDoc;
  try {
    doc = await fetchPublic(raw, netConfig(env), "text/html,application/xhtml+xml;q=0.9,text/plain;q=0.5");
  } catch (e) {
    if (e instanceof UrlRefused) throw refused(raw, e.reason);
    throw e;
  }
  const type = doc.contentType.split(";")[0]?.trim().toLowerCase() ?? "";
  if (type !== "" && !kinds.test(type)) {
    throw InputError.at(["url"], `the URL serves ${type}, not ${kindName}`, raw, "url_content_type", {
      content_type: type,
    });
  }
  return doc;
}

export const isHtml = (doc: FetchedDoc) => {
  const type = doc.contentType.split(";")[0]?.trim().toLowerCase() ?? "";
  return type === "" ? /^\s*</.test(doc.text) : /html|xml/.test(type);
};
