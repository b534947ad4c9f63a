-- Refunds that can be retried safely. Every refund is an EIP-3009 authorization from the operating
-- wallet whose nonce is derived from the refunded request (payments/refunds.ts): the USDC contract
-- accepts at most one transfer per wallet and nonce, so however often a refund is sent from one
-- wallet it lands once, and reconciliation reads from the chain whether it landed.
-- auth_nonce: that nonce, written with the row. NULL marks a row written before this migration
--   (sent with a random nonce, if at all): it is held, never sent again automatically.
-- asset, network: the token and chain the refund is paid in.
-- auth_from, valid_before: the wallet that signed the last authorization sent and its expiry
--   (NULL: never sent). Reconciliation checks that wallet's nonce, so a rotated operating key
--   cannot make it send a second refund while the first could still land.
-- hold: why a refund waits for the maintainer instead of being sent and retried (NULL: automatic).
ALTER TABLE refunds ADD COLUMN auth_nonce TEXT;
ALTER TABLE refunds ADD COLUMN asset TEXT;
ALTER TABLE refunds ADD COLUMN network TEXT;
ALTER TABLE refunds ADD COLUMN auth_from TEXT;
ALTER TABLE refunds ADD COLUMN valid_before INTEGER;
ALTER TABLE refunds ADD COLUMN hold TEXT;
