-- osint_graph's call log no longer keeps the seed (src/skills/lib/osint-calls.ts): a seed is often
-- a person's name, and the row's request_id joins it to the payer's wallet in `payments`. The
-- seeds logged before are blanked. The column stays, written empty, so a Worker version that
-- still writes it runs during a rollout (or after a rollback); the Cron blanks what such a
-- version writes (src/ops/database.ts, through the index of migration 0017).
UPDATE osint_calls SET seed_entity = '' WHERE seed_entity <> '';
