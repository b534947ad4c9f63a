-- The Cron's sweep of checkouts Stripe may have ended without a word reaching us
-- (src/payments/checkout-sweep.ts): a session whose every webhook delivery failed (a rotated
-- webhook secret, an outage past Stripe's 3 days of retries) was never granted unless its buyer
-- opened the success page, and one Stripe expired stayed `open` for ever. The sweep asks Stripe
-- about such sessions itself and settles them by the same rule as the webhook. Only adds
-- (nullable columns, an index): the running version never reads them.

-- checked_at: when the sweep last asked Stripe about the session (NULL: never). The sweep takes the
-- least recently asked first, so a session Stripe cannot answer about goes to the back and never
-- holds up the others.
ALTER TABLE checkout_sessions ADD COLUMN checked_at INTEGER;
-- stripe_missing_at: when Stripe answered that it does not know the session (404: made under
-- another account's or mode's key). Asking again would get the same answer: the sweep leaves it.
ALTER TABLE checkout_sessions ADD COLUMN stripe_missing_at INTEGER;

-- The sessions the sweep may ask about, least recently asked first: its condition is the sweep's
-- own, and it holds every column the sweep's choice reads, so choosing reads no row (whose payload
-- it would read through). The condition's columns are in it too, a byte each: without them SQLite
-- reads each row to test them, as for migration 0018's index.
CREATE INDEX IF NOT EXISTS checkout_sessions_unsettled
  ON checkout_sessions(checked_at, created_at, payment_pending_at, status, api_key_id, payment_failed_at,
    stripe_missing_at, id)
  WHERE status = 'open' AND api_key_id IS NULL AND payment_failed_at IS NULL AND stripe_missing_at IS NULL;
