-- sent_requests: on a consumer, every redelivery request it sent (checkpoint repairs, audit
-- repairs, operator repairs and the follow-ups of truncated answers), so a truncated answer is
-- followed by a request for the rest at once (invariant 14) and an answer can be matched to the
-- request it answers. answered_at is set by the origin's summary; rows are pruned by age.
create table streamseal.sent_requests (
    request_id uuid primary key,
    origin text not null
        constraint sent_requests_origin_is_service_name check (origin ~ '^[a-z][a-z0-9-]{0,62}$'),
    source text not null
        constraint sent_requests_source_is_known check (source in ('checkpoint', 'audit', 'operator', 'follow_up')),
    request jsonb not null,
    sent_at timestamptz not null default now(),
    answered_at timestamptz,
    -- The request whose truncated answer this one continues.
    follows uuid
);

-- Pruning reads the oldest rows first.
create index sent_requests_by_sent_at on streamseal.sent_requests (sent_at);

---- create above / drop below ----

drop table streamseal.sent_requests;
