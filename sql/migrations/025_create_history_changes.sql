-- Deliberate changes of an origin's sealed history as facts that travel (issue 15 item 2).
--
-- Why: only close_stream reached consumers (stream_closes, migration 008). reclassify_ephemeral
-- and an application's plain DELETE of its own stamped events moved the origin's digests and
-- generation but never the copies, so every later audit read those copies as local extras,
-- forever. history_changes records, on the origin, one row per own stamped counted event that
-- left the folds (removed) or changed its flags (reclassified); manifest answers carry the rows
-- above a consumer's cursor, and the consumer applies each once and keeps its cursor in
-- copy_history_cursors. change_id is handed out under a lock held to commit (see
-- sql/functions/history_changes.sql), so a reader never passes an id that commits later.
create table streamseal.history_changes (
    change_id bigint generated always as identity primary key,
    kind text not null
        constraint history_change_kind_is_known check (kind in ('removed', 'reclassified')),
    event_id uuid not null,
    tenant text not null,
    event_type text not null,
    stream_id text not null,
    origin_seq bigint not null,
    -- The event's flags after the change (removed: the flags it had).
    flags integer not null
        constraint history_change_flags_are_known check (flags & ~7 = 0),
    -- The origin generation this change started (the statement's bump).
    generation bigint not null,
    changed_at timestamptz not null default now()
);

-- On a consumer: per origin, the highest change_id applied to the copies (changes are applied in
-- id order, each once; re-applying one is a no-op anyway).
create table streamseal.copy_history_cursors (
    origin text primary key,
    applied_through bigint not null
        constraint copy_history_cursor_is_not_negative check (applied_through >= 0),
    applied_at timestamptz not null default now()
);

---- create above / drop below ----

drop table streamseal.copy_history_cursors;
drop table streamseal.history_changes;
