-- Reconciliation works through queues; a row it cannot decide (an RPC error on its log search, a
-- provider that refuses the range) goes to the back, so forty such rows cannot starve the rest.
-- checked_at: when reconciliation last looked at the row (NULL: never); the queues go round by it.
-- payment_nonces keeps updated_at for what it means to the admin views (a `running` claim shows as
-- unconfirmed once it is older than its authorization's validity).
ALTER TABLE payment_nonces ADD COLUMN checked_at INTEGER;
ALTER TABLE upstream_payments ADD COLUMN checked_at INTEGER;
-- The queues' scans, as the cron reads them every five minutes.
CREATE INDEX upstream_payments_unreconciled ON upstream_payments(network, chain_status, checked_at);
CREATE INDEX refunds_owed ON refunds(status, updated_at);
