-- The rows the Cron blanks (src/skills/lib/osint-calls.ts seededCalls): osint_graph seeds that a
-- Worker version older than migration 0016 logged during a rollout or after a rollback. Empty while
-- every version writes '', so each run reads only such rows. Its own migration, IF NOT EXISTS: a
-- local database may have applied 0016 while it briefly held this index too.
CREATE INDEX IF NOT EXISTS osint_calls_seeded ON osint_calls (id) WHERE seed_entity <> '';
