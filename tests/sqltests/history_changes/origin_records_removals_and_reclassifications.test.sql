-- Invariants 4 and 10 (issue 15 item 2): every change of this service's stamped, counted history
-- (an application's plain DELETE, close_stream, reclassify_ephemeral, a flags UPDATE) is recorded
-- once as a fact with a monotonic change_id and bumps the generation once per statement, sealed
-- epoch or open; what changes no counted own event (metadata updates, ephemeral deletes, copies,
-- the stamper) records nothing. history_changes_page lists only the requester's types, and its
-- cursor passes the others.
begin;
select plan(19);
select streamseal.set_service_name('hc-origin');

-- 20 own events over 4 streams and 2 types; width 5 closes epochs 0..3 (seq 20 sits in the open epoch 4).
select streamseal.append(array(
    select streamseal_test.own('s' || (i % 4), i, case when i % 2 = 0 then 'b.done' else 'a.done' end,
                               event_id => streamseal_test.uid(i))
    from generate_series(1, 20) i order by i));
select streamseal.stamp();
select is((select count(*)::int from streamseal.close_epochs(width => 5)), 4, 'setup: epochs 0..3 close');
select ingest_copy from (select streamseal.ingest(array[streamseal_test.copy('hc-other', 1, 1, 's0', 1)]) as ingest_copy) x;
select is(streamseal.origin_generation(), 0::bigint, 'stamping and ingesting record nothing and bump nothing');
select is_empty('select * from streamseal.history_changes', 'no change recorded yet');

-- 1. A plain DELETE of 2 own events (seq 1 and seq 19, both sealed) and a copy.
delete from streamseal.events where event_id in (streamseal_test.uid(1), streamseal_test.uid(19));
delete from streamseal.events where origin = 'hc-other';
select is(streamseal.origin_generation(), 1::bigint, 'one DELETE statement of own events bumps exactly once');
-- Identity values are not transactional (other suites take some): ids are read relative to base.
create temporary table hc_base on commit drop as select min(change_id) - 1 as b from streamseal.history_changes;
select results_eq(
    $$ select change_id - (select b from hc_base), kind, event_id, origin_seq, flags, generation from streamseal.history_changes order by change_id $$,
    $$ values (1::bigint, 'removed', streamseal_test.uid(1), 1::bigint, 0, 1::bigint),
              (2::bigint, 'removed', streamseal_test.uid(19), 19::bigint, 0, 1::bigint) $$,
    'both own removals are recorded in origin order, the copy''s deletion is not');

-- 2. reclassify_ephemeral of b.done: 10 events (sealed and open), one statement, one bump.
select is(streamseal.reclassify_ephemeral('b.done'), 10::bigint, 'reclassify marks the 10 b.done events');
select is(streamseal.origin_generation(), 2::bigint, 'the reclassification bumps exactly once');
select is((select count(*)::int from streamseal.history_changes where kind = 'reclassified' and flags = 1 and generation = 2), 10,
    'each reclassified event is recorded with its new flags');

-- 3. Statements that change no counted own event record nothing and bump nothing.
update streamseal.events set metadata = '{"touched": true}';
delete from streamseal.events where event_id = streamseal_test.uid(2);  -- ephemeral now: outside every fold
select is(streamseal.origin_generation(), 2::bigint, 'a metadata UPDATE and an ephemeral DELETE do not bump');
select is((select count(*)::int from streamseal.history_changes), 12, 'and record nothing');

-- 4. close_stream records its removals too.
select is(streamseal.close_stream('t1', 's3'), 4::bigint, 'close_stream of s3 removes its 4 remaining a.done events');
select is(streamseal.origin_generation(), 3::bigint, 'and bumps once');

-- 5. A DELETE of an event only in the open epoch bumps too: a consumer's seal (settled max + 1)
-- can already cover it, and the seal must never stand over changed history.
select streamseal.append(array[streamseal_test.own('s9', 1, 'a.done', event_id => streamseal_test.uid(21))]);
select streamseal.stamp();
delete from streamseal.events where event_id = streamseal_test.uid(21);
select is(streamseal.origin_generation(), 4::bigint, 'a DELETE of an open-epoch event bumps the generation');

-- 6. The page: only the requester's granted (tenant, type) pairs; the cursor passes what it may not see.
select streamseal.grant_redelivery_all_tenants('req-a', array['a.done']);
select streamseal.grant_redelivery_all_tenants('req-ab', array['a.done', 'b.done']);
select streamseal.grant_redelivery('req-other-tenant', array['a.done', 'b.done'], array['t2']);
select results_eq(
    $$ select through - (select b from hc_base), more, jsonb_array_length(changes) from streamseal.history_changes_page((select b from hc_base), 'req-a', 5) $$,
    $$ values (5::bigint, true, 2) $$,
    'a page of 5 scans ids 1..5, lists the 2 a.done removals, and says more remain');
select results_eq(
    $$ select through - (select b from hc_base), more, jsonb_array_length(changes) from streamseal.history_changes_page((select b from hc_base) + 5, 'req-ab', 100) $$,
    $$ values (17::bigint, false, 12) $$,
    'the rest: ids 6..17, all listed for a requester granted both types');
select results_eq(
    $$ select through - (select b from hc_base), more, changes from streamseal.history_changes_page((select b from hc_base) + 17, 'req-a', 100) $$,
    $$ values (17::bigint, false, '[]'::jsonb) $$,
    'a caught-up cursor gets an empty page and keeps its place');
select results_eq(
    $$ select through - (select b from hc_base), more, changes from streamseal.history_changes_page((select b from hc_base), 'req-other-tenant', 100) $$,
    $$ values (17::bigint, false, '[]'::jsonb) $$,
    'a requester granted both types for another tenant only sees none of t1''s changes, and its cursor passes them');
select is((select changes->0 from streamseal.history_changes_page((select b from hc_base), 'req-a', 1)),
    jsonb_build_object('change_id', (select b from hc_base) + 1, 'kind', 'removed', 'event_id', streamseal_test.uid(1), 'tenant', 't1',
                       'event_type', 'a.done', 'stream_id', 's1', 'origin_seq', 1, 'flags', 0),
    'a listed change names the event exactly');
select throws_ok($$ select * from streamseal.history_changes_page(-1, 'req-a', 10) $$, '22023',
    'history_changes_page: cursor -1 is invalid: expected a non-negative change id', 'a negative cursor is refused');

select * from finish();
rollback;
