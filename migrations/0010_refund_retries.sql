-- Refunds that can be retried safely. Every refund is an EIP-3009 authorization from the operating
-- wallet whose nonce is derived from the refunded request (payments/refunds.ts): the USDC contract
-- accepts at most one transfer per nonce, so however often a refund is sent, it lands once, and
-- reconciliation can read from the chain whether it landed.
-- auth_nonce, valid_before: the nonce and expiry of the last authorization sent (NULL: never sent).
-- hold: why a refund waits for the maintainer instead of being sent (NULL: sent, and retried by
-- reconciliation until it lands).
ALTER TABLE refunds ADD COLUMN auth_nonce TEXT;
ALTER TABLE refunds ADD COLUMN valid_before INTEGER;
ALTER TABLE refunds ADD COLUMN hold TEXT;
