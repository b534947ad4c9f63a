/**
 * Which encoding a body is in, as a browser picks it: a byte order mark first, then the
 * Content-Type's charset, else the default (WHATWG falls back to it on a label it has no encoding
 * for, as on no label: an unknown charset is not an error). The fetcher reads pages leniently with these (fetcher.ts decodeBody); a
 * partner's answer, which a caller pays for, is read strictly (decodeStrict).
 */

/** The encoding a byte order mark at the start of `b` names, or null. */
export function bomEncoding(b: Uint8Array): string | null {
  if (b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf) return "utf-8";
  if (b[0] === 0xfe && b[1] === 0xff) return "utf-16be";
  if (b[0] === 0xff && b[1] === 0xfe) return "utf-16le";
  return null;
}

/** The `charset` parameter of a Content-Type, unquoted, or null. */
export function headerCharset(contentType: string): string | null {
  const m = /;\s*charset\s*=\s*(?:"([^"]*)"|([^;\s]*))/i.exec(contentType);
  return m ? (m[1] ?? m[2] ?? null) : null;
}

/** The encoding TextDecoder has for a label, in its lower-case name, or null (also "replacement"). */
export function encodingOf(label: string | null | undefined): string | null {
  if (!label) return null;
  try {
    return new TextDecoder(label).encoding;
  } catch {
    return null;
  }
}

/**
 * `bytes` as text in the encoding they declare: a BOM, else the charset, else UTF-8 (JSON's own).
 * A charset label TextDecoder does not know (empty, `utf8mb4`, `binary`, a misspelling) or one
 * that only means "replacement" (`iso-2022-kr`, …) is no declaration, and the bytes are read as
 * UTF-8, as WHATWG's decoders fall back to their default on a label they cannot get an encoding
 * for (the replacement encoding itself is for documents, not for text we relay). Strict all the
 * same: bytes not valid in the encoding used are an error, never U+FFFD in place of what was sent.
 */
export function decodeStrict(bytes: Uint8Array, contentType: string): { text: string } | { error: string } {
  const label = headerCharset(contentType);
  const bom = bomEncoding(bytes);
  const known = encodingOf(label);
  const encoding = bom ?? known ?? "utf-8";
  try {
    // A decoder of the BOM's encoding drops the BOM itself.
    return { text: new TextDecoder(encoding, { fatal: true, ignoreBOM: false }).decode(bytes) };
  } catch {
    const why = bom
      ? "its byte order mark"
      : label === null
        ? "no charset given: UTF-8"
        : known === null
          ? `charset "${label}" names no encoding we read: UTF-8`
          : `charset "${label}"`;
    return { error: `its bytes are not valid ${encoding} (${why})` };
  }
}
