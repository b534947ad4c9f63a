-- Sessions Stripe ended unpaid (expired, or a bank debit that failed) that never granted a key and
-- hold no payload any more: the Cron deletes their rows 30 days after creation
-- (src/payments/checkout-ledger.ts expiredUnpaidSessions). Before, every row was kept for ever, a
-- few hundred bytes each, bounded only by the checkout rate limit. It covers every column of that
-- statement's own table, so finding them reads no row: api_key_id and payload are NULL in every
-- entry (the condition), a byte each, and without them SQLite reads each row to test them; id is
-- what the check for an api_keys row naming the session reads. Only adds (IF NOT EXISTS): the
-- running version never reads it.
CREATE INDEX IF NOT EXISTS checkout_sessions_unpaid_ended
  ON checkout_sessions(created_at, status, payment_failed_at, api_key_id, payload, id)
  WHERE api_key_id IS NULL AND payload IS NULL;
