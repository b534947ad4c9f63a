-- Reconciliation works through queues; a row it cannot decide (an RPC error on its log search, a
-- provider that refuses the range) goes to the back, so forty such rows cannot starve the rest.
-- upstream_payments.checked_at: when reconciliation last looked at the row (NULL: never).
ALTER TABLE upstream_payments ADD COLUMN checked_at INTEGER;
-- The queues' scans, as the cron reads them every five minutes.
CREATE INDEX upstream_payments_unreconciled ON upstream_payments(network, chain_status, checked_at);
CREATE INDEX refunds_owed ON refunds(status, updated_at);
