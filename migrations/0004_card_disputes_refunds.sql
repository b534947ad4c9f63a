-- Card payments after the grant: which Stripe payment a pack came from, and what refunds and
-- disputes did to it. Columns are added (not a table rebuild) so the session CHECK on status and
-- the api_keys foreign key stay untouched.

-- Stripe's PaymentIntent of a paid session: charge.refunded and charge.dispute.* name it.
ALTER TABLE checkout_sessions ADD COLUMN payment_intent TEXT;
-- Set when checkout.session.async_payment_failed arrived: the delayed payment failed, nothing granted.
ALTER TABLE checkout_sessions ADD COLUMN payment_failed_at INTEGER;
-- When the first-payload run (after the webhook's response) claimed the session; NULL = not started.
ALTER TABLE checkout_sessions ADD COLUMN payload_started_at INTEGER;
CREATE UNIQUE INDEX checkout_sessions_payment_intent ON checkout_sessions(payment_intent);

-- Calls of the pack taken back by refunds so far (the refunded share of calls_total, rounded up);
-- a later partial refund revokes only the difference.
ALTER TABLE api_keys ADD COLUMN calls_revoked INTEGER NOT NULL DEFAULT 0;
-- NULL, or the dispute on the pack's charge: 'open' freezes the key, 'lost' revoked what was left.
ALTER TABLE api_keys ADD COLUMN dispute_status TEXT CHECK (dispute_status IN ('open', 'lost'));
ALTER TABLE api_keys ADD COLUMN dispute_id TEXT;
