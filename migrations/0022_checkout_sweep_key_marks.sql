-- The Cron's checkout sweep (src/payments/checkout-sweep.ts) marked a session Stripe answered 404
-- for as missing for good (migration 0019's stripe_missing_at): one run under the wrong key (a
-- test key in live, another account's) dropped up to 20 due sessions a run from the sweep, paid
-- ones included, whose webhooks had meanwhile been recorded as unknown sessions and are not
-- redelivered.

-- stripe_missing_key: a short hash of the STRIPE_SECRET_KEY the 404 was answered under (never the
-- key). A mark counts only under that key: after a key change every marked session is asked once
-- more. A mark 0019's version wrote has none, so each of those sessions is asked again once.
ALTER TABLE checkout_sessions ADD COLUMN stripe_missing_key TEXT;

-- The sessions the sweep may ask about. As 0019's index, but marked sessions are in it too (whether
-- a mark counts depends on today's key, which no index condition can name), with the mark's key:
-- choosing still reads no row, whose payload it would read through. checked_at leads, so never
-- asked sessions (NULL, by creation) and those asked before (by when) are each one ordered range:
-- the sweep takes a share of each (checkout-sessions.ts unsettledSessions).
CREATE INDEX IF NOT EXISTS checkout_sessions_sweep
  ON checkout_sessions(checked_at, created_at, payment_pending_at, status, api_key_id, payment_failed_at,
    stripe_missing_at, stripe_missing_key, id)
  WHERE status = 'open' AND api_key_id IS NULL AND payment_failed_at IS NULL;

-- 0019's index (checkout_sessions_unsettled) is left as it is: this version does not read it, but
-- the running one does until this one is up (and after a rollback), and without it that version's
-- sweep reads through every row. Only adds.
