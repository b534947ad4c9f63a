-- What a person decided, beside what the Worker decides itself. Only adds columns (nullable, or a
-- default every existing row satisfies), so rows from every earlier migration keep their meaning
-- and the running version keeps working until the new one is up.

-- A refund recorded as paid by hand (POST /api/admin/resolve/refunds/{request_id}): status becomes
-- 'refunded' and tx_hash holds the maintainer's transfer (in lower case), as for an automatic one;
-- resolved_at says it was a person's (NULL: the operating wallet's refund, or still owed) and
-- resolved_note what they wrote. Reconciliation never marks such a row again.
ALTER TABLE refunds ADD COLUMN resolved_at INTEGER;
ALTER TABLE refunds ADD COLUMN resolved_note TEXT;

-- A claim (payment_nonces) or upstream authorization (upstream_payments) whose nonce the chain
-- shows spent while no log of the spend can be found (no archive node, or a provider that dropped
-- the log): reconciliation cannot decide it, and each run would read it again for ever.
-- no_log_runs: runs that judged it so; no_log_since: the first of them (unix ms).
-- hold: what they saw, once that happened on enough runs over a day (reconcile-store.ts
--   NO_LOG_HOLD_RUNS): it is no longer read, listed as `needs_person` by GET /api/admin/payments
--   until the maintainer puts it back in the queue or decides it
--   (POST /api/admin/resolve/{payment_nonces|upstream_payments}/{key}). NULL: in the queue.
ALTER TABLE payment_nonces ADD COLUMN no_log_runs INTEGER NOT NULL DEFAULT 0;
ALTER TABLE payment_nonces ADD COLUMN no_log_since INTEGER;
ALTER TABLE payment_nonces ADD COLUMN hold TEXT;
ALTER TABLE upstream_payments ADD COLUMN no_log_runs INTEGER NOT NULL DEFAULT 0;
ALTER TABLE upstream_payments ADD COLUMN no_log_since INTEGER;
ALTER TABLE upstream_payments ADD COLUMN hold TEXT;
-- The admin view's list of held rows, without a scan of every claim.
CREATE INDEX payment_nonces_held ON payment_nonces(updated_at) WHERE hold IS NOT NULL;
CREATE INDEX upstream_payments_held ON upstream_payments(id) WHERE hold IS NOT NULL;
