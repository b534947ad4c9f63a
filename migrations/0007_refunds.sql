-- Refunds from the operating wallet (PARTNER_PAYER_KEY). A caller of an x402-priced partner is
-- settled BEFORE the marketplace pays the partner (so no caller whose payment fails ever costs us
-- the partner's price); if the partner then fails, the caller is refunded what the marketplace
-- kept: the price minus what the partner could collect from us (payments/refunds.ts).
CREATE TABLE refunds (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  request_id TEXT NOT NULL UNIQUE,     -- the caller's paid request (payments.request_id)
  payer TEXT NOT NULL,                 -- refunded to
  amount_micro INTEGER NOT NULL,       -- USDC atomic units refunded (or owed)
  withheld_micro INTEGER NOT NULL,     -- the part the partner could collect from us: disputed with it
  reason TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('owed', 'refunded')),
  tx_hash TEXT,                        -- the refund's transaction once settled
  error TEXT,                          -- why an automatic refund did not go through (still owed)
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
