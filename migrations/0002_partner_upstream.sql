-- What the operating wallet (PARTNER_PAYER_KEY) paid partners that charge x402 themselves, one row
-- per paid upstream call. Written the moment the partner is paid, before the caller's own payment
-- settles or fails: that money left our wallet either way. When the caller was charged too, the
-- payout_ledger row with the same request_id has paid_upstream = 1 and is never owed.
CREATE TABLE upstream_payments (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  request_id TEXT NOT NULL,
  partner_id TEXT NOT NULL,
  service_id TEXT NOT NULL,
  amount_micro INTEGER NOT NULL,
  tx_hash TEXT,                    -- from the partner's PAYMENT-RESPONSE; NULL when it sent none
  upstream_status INTEGER NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX upstream_payments_request ON upstream_payments(request_id);
