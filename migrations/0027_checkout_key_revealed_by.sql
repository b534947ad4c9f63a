-- Which request took a checkout's one key reveal (src/payments/key-reveal.ts). The reveal is taken
-- with a compare-and-swap that clears api_key_reveal; when D1 committed it and then answered with
-- an error (a connection lost after the commit), the request could not tell whether the swap was
-- its own or a concurrent Reveal's, so it showed no key, and the next Reveal said "already shown":
-- a paid pack's key was lost for good. The swap now writes its request id here in the same
-- statement, and a request whose swap errored re-reads it. Only adds a nullable column: the
-- running version never reads or writes it, and rows revealed before it stay NULL.
ALTER TABLE checkout_sessions ADD COLUMN api_key_revealed_by TEXT;
