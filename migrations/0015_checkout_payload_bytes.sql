-- What unpaid checkouts may hold in D1 (src/payments/checkout-ledger.ts). A checkout's first-call
-- payload (up to 1 MiB) was stored when the session was created, before anyone paid, and never
-- cleared: creating sessions costs nothing, so 20 a minute from one IPv6 /64 filled D1's 10 GB in
-- about 8 hours, and a full D1 refuses every x402 claim. Only adds (nullable columns, indexes), so
-- rows from every earlier migration keep their meaning and the running version keeps working until
-- the new one is up. Nothing here reads a payload: a database already full of them migrates at once.

-- payload_bytes: the payload's size as the row stores it (UTF-8 bytes of its JSON), written with
-- it and cleared with it. The cap on unpaid payloads sums this column, never length(payload),
-- which reads every payload. NULL: no payload, or one written before this migration (below).
ALTER TABLE checkout_sessions ADD COLUMN payload_bytes INTEGER;
-- payment_pending_at: when Stripe first reported the session complete with its payment still to
-- clear (a bank debit, which takes days): its payload is kept past the session's own 24 h, until
-- the payment clears or fails. NULL: Stripe never said so.
ALTER TABLE checkout_sessions ADD COLUMN payment_pending_at INTEGER;

-- Unpaid sessions holding a payload, oldest first. It covers every column the cap's sum and the
-- Cron's clearing read, so neither reads a row (whose payload it would read through).
CREATE INDEX checkout_sessions_unpaid_payload
  ON checkout_sessions(created_at, payload_bytes, payment_pending_at, api_key_id)
  WHERE payload_bytes IS NOT NULL AND api_key_id IS NULL;
-- Unpaid payloads not measured yet: those of the rows already here, and of the rows the previous
-- version writes until the new one is up. The Cron measures them in small chunks (ops/database.ts),
-- after which they are counted and cleared as any other; the index is then empty.
CREATE INDEX checkout_sessions_unmeasured_payload
  ON checkout_sessions(created_at)
  WHERE payload IS NOT NULL AND payload_bytes IS NULL AND api_key_id IS NULL;
