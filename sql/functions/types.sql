-- Row shapes private to the code package. They start with '_' because the install drops and
-- recreates them (their OIDs change on every migrate); public row shapes that Go binds to live in
-- migrations instead, so a running control plane survives a migrate by a newer replica.

-- digest_delta: a change to one stream_digests bucket. XOR is its own inverse, so adding and
-- removing an event fold the same hashes; only n carries a sign.
create type streamseal._digest_delta as (
    origin text,
    tenant text,
    event_type text,
    stream_id text,
    x0 bigint,
    x1 bigint,
    n bigint
);

-- _digest_difference: one bucket where stream_digests and a recompute disagree.
create type streamseal._digest_difference as (
    origin text,
    tenant text,
    event_type text,
    stream_id text,
    kind text,
    stored_x0 bigint,
    stored_x1 bigint,
    stored_n bigint,
    actual_x0 bigint,
    actual_x1 bigint,
    actual_n bigint
);
