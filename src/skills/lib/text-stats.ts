/** Unicode segmentation shared by research and ai_detector (one segmenter of each kind per isolate). */

let wordSeg: Intl.Segmenter | undefined;
let sentenceSeg: Intl.Segmenter | undefined;

/** Word-like segments (UAX #29), in order; "don't" is one word. */
export function wordsOf(text: string): string[] {
  wordSeg ??= new Intl.Segmenter("en", { granularity: "word" });
  const out: string[] = [];
  for (const s of wordSeg.segment(text)) if (s.isWordLike) out.push(s.segment);
  return out;
}

/** Sentences (UAX #29 sentence boundaries), trimmed, empty ones dropped. */
export function sentencesOf(text: string): string[] {
  sentenceSeg ??= new Intl.Segmenter("en", { granularity: "sentence" });
  const out: string[] = [];
  for (const s of sentenceSeg.segment(text)) {
    const t = s.segment.replace(/\s+/g, " ").trim();
    if (t) out.push(t);
  }
  return out;
}

/** Lowercased with a light plural strip, so "payments" meets "payment". */
export function stem(word: string): string {
  let w = word.toLowerCase().replaceAll("\u2019", "'");
  if (w.endsWith("'s")) w = w.slice(0, -2);
  if (w.length > 4 && w.endsWith("ies")) return `${w.slice(0, -3)}y`;
  if (w.length > 3 && w.endsWith("s") && !w.endsWith("ss") && !w.endsWith("us") && !w.endsWith("is"))
    return w.slice(0, -1);
  return w;
}
