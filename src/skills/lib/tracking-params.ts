/**
 * Query parameters that only identify a campaign, click or visitor, never the resource. Kept in one
 * place: url_normalize strips these, and the docs list them from here.
 */
export const TRACKING_PREFIXES = ["utm_", "mtm_", "pk_", "hsa_"] as const;
export const TRACKING_PARAMS = [
  "gclid",
  "gclsrc",
  "dclid",
  "gbraid",
  "wbraid",
  "gad_source",
  "fbclid",
  "msclkid",
  "yclid",
  "twclid",
  "ttclid",
  "li_fat_id",
  "igshid",
  "mc_cid",
  "mc_eid",
  "_ga",
  "_gl",
  "_hsenc",
  "_hsmi",
  "__hstc",
  "__hssc",
  "__hsfp",
  "hsctatracking",
  "mkt_tok",
  "oly_anon_id",
  "oly_enc_id",
  "vero_id",
  "vero_conv",
  "rb_clickid",
  "s_kwcid",
  "ef_id",
  "srsltid",
  "_openstat",
  "wickedid",
] as const;

const exact = new Set<string>(TRACKING_PARAMS);

export function isTrackingParam(name: string): boolean {
  const lower = name.toLowerCase();
  return exact.has(lower) || TRACKING_PREFIXES.some((p) => lower.startsWith(p));
}
