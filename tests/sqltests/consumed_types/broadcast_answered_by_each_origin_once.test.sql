-- Invariants 12 and 14: a backfill's broadcast request (sent_requests origin '_all') may be
-- answered by any origin, each once, only within its scope (named types, consumed tenants); a
-- truncated answer keeps the type requested until that origin's follow-up says it is done, and
-- the type completes once every known origin answered done. A request not sent is unsolicited.
begin;
select plan(14);
select streamseal.set_service_name('bc-billing');
select streamseal.subscribe(array['bc.placed'], null, array['acme']);
select streamseal.consumed_types_reconcile(true);
select streamseal.subscribe(array['bc.shipped'], null, array['acme']);
select streamseal.consumed_types_reconcile(false);
insert into streamseal.known_origins (origin, control_subject, interval_seconds, last_checkpoint_at, last_window_to)
values ('bc-orders', 'streamseal.ctl.bc-orders', 60, now(), 10), ('bc-stock', 'streamseal.ctl.bc-stock', 60, now(), 10);

insert into streamseal.sent_requests (request_id, origin, source, request, backfill) values
    ('b0000000-0000-0000-0000-000000000001', '_all', 'backfill',
     '{"request_id":"b0000000-0000-0000-0000-000000000001","types":["bc.shipped"],"max_events":10,"state_only":true}',
     'b0000000-0000-0000-0000-000000000001');
select streamseal.backfill_requested(array['bc.shipped'], 'b0000000-0000-0000-0000-000000000001');
select is((select status from streamseal.consumed_types where event_type = 'bc.shipped'), 'requested', 'the expansion is requested');

select is(streamseal.check_redelivery_answer('b0000000-0000-0000-0000-000000000001', 'bc-orders', false,
    '{acme}', '{bc.shipped}', '{s}', '{7}', '{null}', '{4}', '{null}'), null,
    'any origin''s bundle of a named type and a consumed tenant answers the broadcast');
select is(streamseal.check_redelivery_answer('b0000000-0000-0000-0000-000000000001', 'bc-orders', false,
    '{globex}', '{bc.shipped}', '{s}', '{7}', '{null}', '{4}', '{null}'), 'out_of_scope',
    'a tenant this service does not consume is out of scope');
select is(streamseal.check_redelivery_answer('b0000000-0000-0000-0000-000000000001', 'bc-orders', false,
    '{acme}', '{bc.placed}', '{s}', '{7}', '{null}', '{4}', '{null}'), 'out_of_scope',
    'a type the broadcast did not name is out of scope');
select is(streamseal.check_redelivery_answer('b0000000-0000-0000-0000-000000000009', 'bc-orders', false,
    '{acme}', '{bc.shipped}', '{s}', '{7}', '{null}', '{4}', '{null}'), 'unsolicited',
    'a request id never sent is unsolicited');

-- bc-orders' answer is truncated: it is asked again (a directed follow-up of the backfill).
select is(streamseal.check_redelivery_answer('b0000000-0000-0000-0000-000000000001', 'bc-orders', true,
    '{}', '{}', '{}', '{}', '{}', '{}', '{}'), null, 'bc-orders'' summary closes the broadcast for bc-orders');
select is(streamseal.backfill_answered('b0000000-0000-0000-0000-000000000001', 'bc-orders', 10, true, total => 13),
          'b0000000-0000-0000-0000-000000000001'::uuid, 'the summary is counted for its backfill');
select is(streamseal.check_redelivery_answer('b0000000-0000-0000-0000-000000000001', 'bc-orders', false,
    '{acme}', '{bc.shipped}', '{s}', '{7}', '{null}', '{4}', '{null}'), 'replayed',
    'bc-orders answering the same broadcast again is a replay');
select is(streamseal.check_redelivery_answer('b0000000-0000-0000-0000-000000000001', 'bc-stock', true,
    '{}', '{}', '{}', '{}', '{}', '{}', '{}'), null, 'another origin still answers the broadcast');
select streamseal.backfill_answered('b0000000-0000-0000-0000-000000000001', 'bc-stock', 0, false);
select is((select status from streamseal.consumed_types where event_type = 'bc.shipped'), 'requested',
          'while bc-orders'' answer is truncated the type stays requested');

insert into streamseal.sent_requests (request_id, origin, source, request, follows, backfill) values
    ('b0000000-0000-0000-0000-000000000002', 'bc-orders', 'follow_up',
     '{"request_id":"b0000000-0000-0000-0000-000000000002","types":["bc.shipped"],"max_events":10,"state_only":true}',
     'b0000000-0000-0000-0000-000000000001', 'b0000000-0000-0000-0000-000000000001');
select is(streamseal.check_redelivery_answer('b0000000-0000-0000-0000-000000000002', 'bc-orders', false,
    '{acme}', '{bc.shipped}', '{s}', '{17}', '{null}', '{14}', '{null}'), null,
    'the follow-up names no tenant either: a bundle of a consumed tenant answers it');
select streamseal.backfill_answered('b0000000-0000-0000-0000-000000000002', 'bc-orders', 3, false);
select is((select status from streamseal.consumed_types where event_type = 'bc.shipped'), 'complete',
          'the follow-up''s final answer completes the type');
select results_eq($$ select origin, shipped, done from streamseal.broadcast_answers order by 1 $$,
                  $$ values ('bc-orders'::text, 13::bigint, true), ('bc-stock', 0, true) $$,
                  'progress per origin: events shipped and done');
select results_eq($$ select origin, total from streamseal.broadcast_answers order by 1 $$,
                  $$ values ('bc-orders'::text, 13::bigint), ('bc-stock', null) $$,
                  'the total an origin stated with its first answer is kept; an origin that stated none has none');

select * from finish();
rollback;
