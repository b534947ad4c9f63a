-- Sessions that never granted a key and hold no payload any more, oldest first: the Cron deletes
-- their rows 30 days after creation (src/payments/checkout-ledger.ts expiredUnpaidSessions). Before,
-- every row was kept for ever, a few hundred bytes each, bounded only by the checkout rate limit.
-- It covers every column that statement reads, so finding them reads no row: api_key_id and
-- payload are NULL in every entry (the condition), a byte each, and without them SQLite reads each
-- row to test them. Only adds (IF NOT EXISTS): the running version never reads it.
CREATE INDEX IF NOT EXISTS checkout_sessions_unpaid_done
  ON checkout_sessions(created_at, payment_pending_at, payment_failed_at, api_key_id, payload)
  WHERE api_key_id IS NULL AND payload IS NULL;
