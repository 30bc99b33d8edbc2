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

-- _counted_change: one counted event entering (+1) or leaving (-1) the folds, as the write-path
-- triggers hand it to _fold_changes().
create type streamseal._counted_change as (
    origin text,
    origin_seq bigint,
    tenant text,
    event_type text,
    stream_id text,
    event_id uuid,
    sign integer
);

-- _epoch_delta: a change to one closed epoch's (tenant, event_type) fold.
create type streamseal._epoch_delta as (
    origin text,
    epoch bigint,
    tenant text,
    event_type text,
    x0 bigint,
    x1 bigint,
    n bigint
);

-- _redelivery_row: one selected event, as select_redelivery returns it (collected per chunk).
create type streamseal._redelivery_row as (
    event_id uuid,
    origin_seq bigint,
    type_seq bigint,
    tenant text,
    stream_id text,
    stream_version bigint,
    event_type text,
    flags integer,
    payload bytea,
    metadata jsonb,
    occurred_at timestamptz
);
