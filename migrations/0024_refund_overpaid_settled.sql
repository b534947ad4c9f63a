-- A hand refund recorded for more than its refund owed (GET /api/admin/payouts overpaid_micro) that a
-- person then settled: the payer gave the excess back, or it was written off
-- (POST /api/admin/resolve/refunds/{request_id} with outcome overpayment_settled and a note saying
-- which). Kept in columns of their own so the row keeps what was paid and owed, and leaves the top of
-- the list. Only adds nullable columns: rows from every earlier migration keep their meaning.
-- NULL: not settled (or not overpaid). A correction of the amount (outcome amount_corrected) clears them.
ALTER TABLE refunds ADD COLUMN overpaid_settled_at INTEGER;
ALTER TABLE refunds ADD COLUMN overpaid_settled_note TEXT;
