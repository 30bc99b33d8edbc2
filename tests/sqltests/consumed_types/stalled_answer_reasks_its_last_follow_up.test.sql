-- Invariant 14 (every request reaches an answer), issue 18: an origin answered a backfill
-- truncated and its follow-up for the rest brought no summary (lost on the way): after
-- reask_after without progress the last unanswered follow-up is returned to send again, under its
-- recorded id and body, claimed once (a second replica finds nothing), backing off (the next
-- re-ask waits twice as long). A done answer, an answered follow-up and a complete type are left.
begin;
select plan(7);
select streamseal.set_service_name('rs-billing');
select streamseal.subscribe_all_tenants(array['rs.paid']);
select streamseal.consumed_types_reconcile(true);
insert into streamseal.consumed_types (event_type, status, backfill_request, requested_at)
values ('rs.shipped', 'requested', 'e0000000-0000-0000-0000-000000000001', now() - interval '1 hour');
insert into streamseal.sent_requests (request_id, origin, source, request, sent_at, backfill, answered_at)
values ('e0000000-0000-0000-0000-000000000001', '_all', 'backfill', '{"request_id":"e0000000-0000-0000-0000-000000000001"}',
        now() - interval '1 hour', 'e0000000-0000-0000-0000-000000000001', now() - interval '50 minutes'),
       -- rs-orders: its first follow-up was answered (truncated), its second never was.
       ('e0000000-0000-0000-0000-000000000002', 'rs-orders', 'follow_up', '{"request_id":"e0000000-0000-0000-0000-000000000002"}',
        now() - interval '50 minutes', 'e0000000-0000-0000-0000-000000000001', now() - interval '40 minutes'),
       ('e0000000-0000-0000-0000-000000000003', 'rs-orders', 'follow_up', '{"request_id":"e0000000-0000-0000-0000-000000000003","after":{"stream":"s9","version":4}}',
        now() - interval '40 minutes', 'e0000000-0000-0000-0000-000000000001', null),
       -- rs-stock: done; its last follow-up's summary said nothing more.
       ('e0000000-0000-0000-0000-000000000004', 'rs-stock', 'follow_up', '{"request_id":"e0000000-0000-0000-0000-000000000004"}',
        now() - interval '40 minutes', 'e0000000-0000-0000-0000-000000000001', null);
insert into streamseal.broadcast_answers (backfill, origin, shipped, done, updated_at)
values ('e0000000-0000-0000-0000-000000000001', 'rs-orders', 400, false, now() - interval '40 minutes'),
       ('e0000000-0000-0000-0000-000000000001', 'rs-stock', 900, true, now() - interval '40 minutes');

select is_empty($$ select * from streamseal.backfill_reask_stalled(interval '1 hour') $$,
                'an answer silent for less than reask_after is not re-asked');
select results_eq($$ select request_id, origin, request ->> 'request_id' from streamseal.backfill_reask_stalled(interval '10 minutes') $$,
                  $$ values ('e0000000-0000-0000-0000-000000000003'::uuid, 'rs-orders', 'e0000000-0000-0000-0000-000000000003') $$,
                  'the stalled answer''s last unanswered follow-up is returned under its recorded id (not the answered one, not the done origin''s)');
select is_empty($$ select * from streamseal.backfill_reask_stalled(interval '10 minutes') $$,
                'a second claim (another replica, or the next round) finds it claimed');
select is((select sent_at = now() from streamseal.sent_requests where request_id = 'e0000000-0000-0000-0000-000000000003'), true,
          'the re-ask records when the follow-up was sent again');

-- Backoff: sent again 40 minutes after the answer's last progress, the next re-ask waits 40.
update streamseal.sent_requests set sent_at = now() - interval '30 minutes' where request_id = 'e0000000-0000-0000-0000-000000000003';
update streamseal.broadcast_answers set updated_at = now() - interval '70 minutes' where origin = 'rs-orders';
select is_empty($$ select * from streamseal.backfill_reask_stalled(interval '10 minutes') $$,
                'after a re-ask the next waits as long as the answer had been silent (40 minutes, not 10)');
update streamseal.sent_requests set sent_at = now() - interval '41 minutes' where request_id = 'e0000000-0000-0000-0000-000000000003';
update streamseal.broadcast_answers set updated_at = now() - interval '81 minutes' where origin = 'rs-orders';
select is((select count(*)::int from streamseal.backfill_reask_stalled(interval '10 minutes')), 1,
          'once that has passed it is asked again');

update streamseal.sent_requests set sent_at = now() - interval '5 hours' where request_id = 'e0000000-0000-0000-0000-000000000003';
update streamseal.consumed_types set status = 'complete' where event_type = 'rs.shipped';
select is_empty($$ select * from streamseal.backfill_reask_stalled(interval '10 minutes') $$,
                'a backfill whose type is complete is never re-asked');

select * from finish();
rollback;
