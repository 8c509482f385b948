-- The per-user cap on seats held at once (AcquireHold::max_held_seats).
-- A hold with a cap locks its holder's row here, after its seats, and counts
-- the holder's seats under that lock: one holder's concurrent holds of one
-- event are counted one after another (no advisory locks).
CREATE TABLE holders (
    event_id  TEXT COLLATE "C" NOT NULL REFERENCES events (event_id),
    holder_id TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (event_id, holder_id)
);
-- Counting a holder's seats reads only theirs.
CREATE INDEX seats_by_holder ON seats (event_id, holder_id) WHERE holder_id IS NOT NULL;
