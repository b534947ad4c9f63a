/**
 * The published shares as text, to one decimal, rounded as the figures are (query.ts): a success
 * rate down, so 0.9998 (one failure in 5,000) reads 99.9%, never 100.0%; an error rate up, so
 * one error in 5,000 reads 0.1%, never 0.0%. The shares have 4 decimals: the small epsilon
 * absorbs float error (0.57 * 1000 is 569.999…) and cannot cross a whole tenth.
 */
export const successPercent = (rate: number | null) =>
  rate === null ? "–" : `${(Math.floor(rate * 1000 + 1e-6) / 10).toFixed(1)}%`;

export const errorPercent = (rate: number | null) =>
  rate === null ? "–" : `${(Math.ceil(rate * 1000 - 1e-6) / 10).toFixed(1)}%`;
