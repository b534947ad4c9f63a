-- What unpaid checkouts' first-call payloads hold together, kept as one running total instead of
-- summed at every checkout (src/payments/checkout-sessions.ts, UNPAID_PAYLOADS_MAX_BYTES). The sum
-- ran over the checkout_sessions_unpaid_payload index: no payload was read, but every unpaid row
-- was, and D1 bills rows read. Creating a checkout is free, so 200,000 unpaid ones made each
-- checkout with a payload read 200,001 rows (its check before Stripe, and again its INSERT).
-- Reading this one row instead costs one, whatever waits unpaid.

-- bytes: the sum of payload_bytes over the sessions that hold a measured payload and have no key
-- (payload_bytes IS NOT NULL AND api_key_id IS NULL), the rows the cap counts. One row, id 1.
CREATE TABLE checkout_unpaid_payloads (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  bytes INTEGER NOT NULL
);

-- Started from the rows already here (one pass over the index, once).
INSERT INTO checkout_unpaid_payloads (id, bytes)
  SELECT 1, coalesce(sum(payload_bytes), 0) FROM checkout_sessions
  WHERE payload_bytes IS NOT NULL AND api_key_id IS NULL;

-- Kept true by triggers, not by each writer: a trigger runs inside the statement that fired it, so
-- the total moves in the same transaction as the row (a refused or rolled-back write moves
-- neither), and no writer can forget it: the checkout's INSERT, an expiry or a failed debit
-- clearing a payload, the grant giving a session its key, the Cron's clearing, measuring and
-- deleting, the version still running while this one deploys (or after a rollback), and SQL run by
-- hand alike. A session counts its payload_bytes while it has no key; only those two columns move
-- it: one trigger takes a row's old share out, one puts its new share in (of a row the code's
-- writes change, one of them fires).
-- D1's meta.changes is sqlite3_total_changes(): a write that moves the total reports one change
-- more per row (the code tests `changes > 0`, and counts cleared rows by RETURNING).
-- A migration that rebuilds checkout_sessions (a copy and rename) drops these: it must make them
-- again (test/payments/checkout-unpaid-total.test.ts compares the total with the sum).
CREATE TRIGGER checkout_unpaid_payloads_insert AFTER INSERT ON checkout_sessions
  WHEN NEW.payload_bytes IS NOT NULL AND NEW.api_key_id IS NULL
BEGIN
  UPDATE checkout_unpaid_payloads SET bytes = bytes + NEW.payload_bytes WHERE id = 1;
END;

CREATE TRIGGER checkout_unpaid_payloads_delete AFTER DELETE ON checkout_sessions
  WHEN OLD.payload_bytes IS NOT NULL AND OLD.api_key_id IS NULL
BEGIN
  UPDATE checkout_unpaid_payloads SET bytes = bytes - OLD.payload_bytes WHERE id = 1;
END;

CREATE TRIGGER checkout_unpaid_payloads_update_out AFTER UPDATE OF payload_bytes, api_key_id ON checkout_sessions
  WHEN OLD.payload_bytes IS NOT NULL AND OLD.api_key_id IS NULL
BEGIN
  UPDATE checkout_unpaid_payloads SET bytes = bytes - OLD.payload_bytes WHERE id = 1;
END;

CREATE TRIGGER checkout_unpaid_payloads_update_in AFTER UPDATE OF payload_bytes, api_key_id ON checkout_sessions
  WHEN NEW.payload_bytes IS NOT NULL AND NEW.api_key_id IS NULL
BEGIN
  UPDATE checkout_unpaid_payloads SET bytes = bytes + NEW.payload_bytes WHERE id = 1;
END;
