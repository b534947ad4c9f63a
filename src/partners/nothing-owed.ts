/**
 * A refund a person recorded as owed to nobody (payments/refund-by-hand.ts dismissInDoubt: a share
 * kept back in doubt that the partner was paid in full), as SQL over the refunds row `t`: refunded,
 * since nothing is owed and no send or decision may take it again (each writes only an owed row),
 * but by nobody: by hand (resolved_at) and with no transfer, which every refund paid has (a hand
 * refund's is required; the wallet's are never resolved_at). Sums of money refunded leave it out.
 * Here, below both, because the payout report (payouts.ts) flags it too and partners import no
 * payments code; payments/refunds.ts passes it on.
 */
export const nothingOwed = (t = "refunds") =>
  `(${t}.status = 'refunded' AND ${t}.resolved_at IS NOT NULL AND ${t}.tx_hash IS NULL)`;
