-- Each card credit spent, under the request that spent it (src/payments/credits.ts). Written in
-- the spend's own D1 batch, so a spend whose answer D1 lost ("Network connection lost" after the
-- commit) can be read back by the request id, and a failed call's give-back, which may be retried,
-- gives the credit back once: it runs only while given_back is 0 and sets it in the same batch.
-- A request whose spend read back as not done writes a row with given_back = 1 (a marker), so a
-- spend batch D1 commits later fails on the primary key and takes nothing.
-- Only adds: the previous version, which spends and gives back a whole call itself, never reads
-- it. Rows given back are kept an hour (CARD_SPEND_KEPT_MS), others 35 days, for a maintainer
-- acting on a give-back's `final: true` line (CARD_SPEND_UNRETURNED_KEPT_DAYS); each spend deletes
-- a few, the Cron the rest (ops/database.ts), each kind by the index.
CREATE TABLE IF NOT EXISTS card_spends (
  request_id TEXT PRIMARY KEY,
  key_hash TEXT NOT NULL,
  spent_at INTEGER NOT NULL,
  given_back INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS card_spends_given_back_spent_at ON card_spends (given_back, spent_at);
