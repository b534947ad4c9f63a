-- One transfer pays one payout batch (src/partners/payouts.ts settlePartner): the same tx_hash
-- recorded for two batches booked one transfer as covering calls it never paid.
--
-- Only adds (the running version keeps working until the new one is up), so existing rows are
-- neither rewritten nor judged here: a database may already hold one hash for several batches,
-- on which a unique index over every row would fail. Batches written from now on say tx_unique = 1
-- and are unique among themselves by the hash in lower case (0xAB.. and 0xab.. are the same
-- transaction); settlePartner also refuses a hash any earlier batch holds, in the same D1 batch.
-- Earlier ones keep 0; GET /api/admin/payouts marks those that repeat an earlier hash
-- (batches[].tx_reused) for the maintainer to check.
ALTER TABLE payout_batches ADD COLUMN tx_unique INTEGER NOT NULL DEFAULT 0;
CREATE UNIQUE INDEX payout_batches_tx_hash ON payout_batches(lower(tx_hash)) WHERE tx_unique = 1;
