-- What an accepted authorization promises, kept with its claim so that one whose settlement was
-- never confirmed (status 'failed', or 'running' past its validity) can be checked against the chain
-- and, if it landed, written to the ledger without the request that carried it. NULL on rows from
-- before this migration (and on any claim that is not an EIP-3009 authorization).
ALTER TABLE payment_nonces ADD COLUMN payer TEXT;
ALTER TABLE payment_nonces ADD COLUMN pay_to TEXT;
ALTER TABLE payment_nonces ADD COLUMN asset TEXT;
ALTER TABLE payment_nonces ADD COLUMN network TEXT;
ALTER TABLE payment_nonces ADD COLUMN amount_atomic INTEGER;
ALTER TABLE payment_nonces ADD COLUMN auth_nonce TEXT;      -- the EIP-3009 nonce (0x, 32 bytes)
ALTER TABLE payment_nonces ADD COLUMN valid_before INTEGER; -- unix seconds; after it nothing can settle
ALTER TABLE payment_nonces ADD COLUMN x402_version INTEGER;
CREATE INDEX payment_nonces_status ON payment_nonces(status, updated_at);
