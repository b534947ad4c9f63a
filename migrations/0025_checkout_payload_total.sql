-- What unpaid checkouts' first-call payloads hold, kept as one running total
-- (src/payments/checkout-payload-total.ts). Each checkout with a payload summed checkout_sessions'
-- payload_bytes over every unpaid row through the checkout_sessions_unpaid_payload index, twice
-- (the check, then the INSERT): with 200,000 unpaid rows each checkout read 400,002 rows (D1 bills
-- rows read), and anyone can create unpaid checkouts for free. Now a checkout reads and moves this
-- one row, in the same D1 batch as every write that sets or clears an unpaid payload; the Cron
-- recomputes it from the real sum every run, so what the previous version writes beside this one
-- (it does not move it) heals.
--
-- No trigger keeps it: a trigger's writes count in D1's meta.changes, which the running version
-- reads to tell its own writes apart (a paid grant answered already_granted). Only adds: a new
-- table, made from the rows already here (as the cap counted them: measured payloads of sessions
-- never granted), so it is right from the moment the new version is up.
--   id: always 1 (the unique index below lets the Cron's recount upsert it).
--   bytes: the sum of payload_bytes over checkout_sessions WHERE payload_bytes IS NOT NULL AND
--     api_key_id IS NULL, as of the last write.
--   claim: a random token the last checkout that took room wrote, so the INSERT in its batch knows
--     the room was taken by its own statement (no changes() across statements).
CREATE TABLE IF NOT EXISTS checkout_payload_total AS
  SELECT CAST(1 AS INTEGER) AS id, CAST(coalesce(sum(payload_bytes), 0) AS INTEGER) AS bytes,
    CAST(NULL AS TEXT) AS claim
  FROM checkout_sessions WHERE payload_bytes IS NOT NULL AND api_key_id IS NULL;
CREATE UNIQUE INDEX IF NOT EXISTS checkout_payload_total_id ON checkout_payload_total(id);
