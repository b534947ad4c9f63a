/**
 * Element nesting an HTML skill reads (html_clean, ai_detector, seo_audit); real pages stay far
 * below it (a few dozen levels). Past it a page is refused: the parsers keep their open elements in
 * arrays (htmlparser2 `unshift`s one per open tag, quadratic in depth) and the converters recurse.
 */
export const MAX_HTML_DEPTH = 512;
