-- Invariant 7: own events are numbered only by the stamper and copies keep their origin's numbers
-- (invariant 3), on plain INSERTs too: the insert trigger refuses the whole statement otherwise.
begin;
select plan(7);
select streamseal.set_service_name('triggers-own-copy');

select throws_ok(
    $$ insert into streamseal.events (event_id, origin, origin_seq, type_seq, tenant, stream_id, stream_version, event_type, payload)
       values (streamseal_test.uid(1), 'trig-src', 1, 1, 't1', 'c1', 1, 'a.done', '\x01'),
              (streamseal_test.uid(2), 'triggers-own-copy', 5, 5, 't1', 'o1', 1, 'a.done', '\x02') $$,
    '22023',
    'event 00000000-0000-0000-0000-000000000002 claims origin "triggers-own-copy" (this service) with origin_seq 5: own events are numbered by the stamper, insert them with origin_seq null',
    'a plain INSERT of an own event carrying origin_seq is refused');
select throws_ok(
    $$ insert into streamseal.events (event_id, origin, tenant, stream_id, stream_version, event_type, payload)
       values (streamseal_test.uid(3), 'triggers-own-copy', 't1', 'o1', 1, 'a.done', '\x03'),
              (streamseal_test.uid(4), 'trig-src', 't1', 'c1', 1, 'a.done', '\x04') $$,
    '22023',
    'event 00000000-0000-0000-0000-000000000004 from origin "trig-src" has no origin_seq: a copy must carry its origin''s sequence',
    'a plain INSERT of a copy without origin_seq is refused');
select is((select count(*)::int from streamseal.events), 0, 'neither refused statement wrote a row');
select is((select count(*)::int from streamseal.stream_digests), 0, 'neither refused statement folded a digest');

insert into streamseal.events (event_id, origin, origin_seq, type_seq, tenant, stream_id, stream_version, event_type, payload)
values (streamseal_test.uid(5), 'triggers-own-copy', null, null, 't1', 'o1', 1, 'a.done', '\x05'),
       (streamseal_test.uid(6), 'trig-src', 1, 1, 't1', 'c1', 1, 'a.done', '\x06');
select is((select count(*)::int from streamseal.events), 2, 'an unstamped own event and a numbered copy are accepted');
select results_eq(
    $$ select origin, n from streamseal.stream_digests order by origin $$,
    $$ values ('trig-src', 1::bigint) $$,
    'the copy is folded at insert; the own event waits for the stamper');
select results_eq($$ select stamped, last_origin_seq from streamseal.stamp() $$, $$ values (1, 1::bigint) $$,
    'the stamper numbers the plainly inserted own event');

select * from finish();
rollback;
