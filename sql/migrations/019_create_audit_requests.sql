-- audit_requests: on a consumer, every repair request an audit sent (action 'requested') or, in
-- report-only mode, would have sent ('would_request'), byte for byte: report-only is an exact dry
-- run of auto-repair, readable after the fact like the checkpoint path's gap_reports. Pruned by
-- age with sent_requests.
create table streamseal.audit_requests (
    id bigint generated always as identity primary key,
    recorded_at timestamptz not null default now(),
    origin text not null
        constraint audit_requests_origin_is_service_name check (origin ~ '^[a-z][a-z0-9-]{0,62}$'),
    action text not null
        constraint audit_requests_action_is_known check (action in ('requested', 'would_request')),
    request jsonb not null
);

-- Pruning reads the oldest rows first.
create index audit_requests_by_recorded_at on streamseal.audit_requests (recorded_at);

---- create above / drop below ----

drop table streamseal.audit_requests;
