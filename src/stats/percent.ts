/**
 * The published shares as text, to one decimal, rounded as the figures are (query.ts): a success
 * rate down, so 0.9998 (one failure in 5,000) reads 99.9%, never 100.0%; an error rate up, so
 * one error in 5,000 reads 0.1%, never 0.0%. The shares have 4 decimals, so rate × 1000 is a
 * whole number or at least 0.1 from one (0.1112 × 1000 is 111.19999…): the epsilon only keeps
 * float error at a whole number (x.0 read as x-1 + 0.999…) from moving it a tenth.
 */
export const successPercent = (rate: number | null) =>
  rate === null ? "–" : `${(Math.floor(rate * 1000 + 1e-6) / 10).toFixed(1)}%`;

export const errorPercent = (rate: number | null) =>
  rate === null ? "–" : `${(Math.ceil(rate * 1000 - 1e-6) / 10).toFixed(1)}%`;
