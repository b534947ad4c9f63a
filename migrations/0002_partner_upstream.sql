-- What the operating wallet (PARTNER_PAYER_KEY) owes or paid partners that charge x402 themselves:
-- one row per authorization handed to a partner, written the moment it is handed over, before the
-- caller's own payment settles or fails (the partner can collect it either way). When the caller
-- was charged too, the payout_ledger row with the same request_id has paid_upstream = 1 and is
-- never owed.
CREATE TABLE upstream_payments (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  request_id TEXT NOT NULL,
  partner_id TEXT NOT NULL,
  service_id TEXT NOT NULL,
  amount_micro INTEGER NOT NULL,
  tx_hash TEXT,                    -- from the partner's PAYMENT-RESPONSE; NULL when it sent none
  upstream_status INTEGER NOT NULL, -- the partner's answer to the paid request; 0 when none came
  created_at INTEGER NOT NULL
);
CREATE INDEX upstream_payments_request ON upstream_payments(request_id);
