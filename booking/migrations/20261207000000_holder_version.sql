-- A hold with a cap is one statement: it counts the holder's seats in the
-- statement's snapshot, then locks the holder's row. Every granted capped
-- hold moves the row's version by one; a hold that finds the locked row past
-- the version its snapshot saw (another capped hold of the holder was granted
-- in between, so the count may miss seats) writes nothing and is sent again.
ALTER TABLE holders ADD COLUMN version BIGINT NOT NULL DEFAULT 0;

-- The count reads only the holder's live seats: held ones by their deadline
-- (a range of this index), seats in payment by their state. Expired holds
-- the sweeper has not returned yet are skipped, not read one by one.
CREATE INDEX seats_by_holder_state ON seats (event_id, holder_id, state, hold_expires_at_ms)
    WHERE holder_id IS NOT NULL;
DROP INDEX seats_by_holder;
