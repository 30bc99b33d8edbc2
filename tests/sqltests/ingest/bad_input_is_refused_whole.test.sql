-- Invariant 3: a copy without its origin's identity (or otherwise bad) refuses the whole ingest
-- batch with a message naming it: nothing of the batch is written or folded, even when the bad
-- copy is not the first.
begin;
select plan(11);
select streamseal.set_service_name('ingest-bad-input');

-- Baseline: one copy in k1, its bucket backdated so any touch shows.
select streamseal.ingest(array[streamseal_test.copy('bad-src', 1, 1, 'k1', 1, event_id => streamseal_test.uid(1))]);
update streamseal.stream_digests set updated_at = '2000-01-01';
create temp table digests_before on commit drop as
select origin, tenant, event_type, stream_id, x0, x1, n, updated_at from streamseal.stream_digests;

-- Every batch starts with a good copy into k1's bucket, so a partial write would move it.
select throws_ok(
    $$ select streamseal.ingest(array[
           streamseal_test.copy('bad-src', 2, 2, 'k1', 2, event_id => streamseal_test.uid(2)),
           streamseal_test.copy(null, 3, 3, 'k2', 1, event_id => streamseal_test.uid(3))]) $$,
    '22023',
    'ingest: copy 00000000-0000-0000-0000-000000000003 (#2 of the batch): origin is required',
    'a copy without origin refuses the batch');
select throws_ok(
    $$ select streamseal.ingest(array[
           streamseal_test.copy('bad-src', 2, 2, 'k1', 2, event_id => streamseal_test.uid(2)),
           streamseal_test.copy('bad-src', 3, 3, 'k2', 1, event_id => streamseal_test.uid(3)),
           streamseal_test.copy('bad-src', 4, 4, 'k2', 2, flags => 12, event_id => streamseal_test.uid(4))]) $$,
    '22023',
    'ingest: copy 00000000-0000-0000-0000-000000000004 (#3 of the batch): flags 12 has unknown bits 8 (known: 1 ephemeral, 2 at-most-once, 4 state-only)',
    'unknown flag bits refuse the batch');
select throws_ok(
    $$ select streamseal.ingest(array[
           streamseal_test.copy('bad-src', 2, 2, 'k1', 2, event_id => streamseal_test.uid(2)),
           streamseal_test.copy('ingest-bad-input', 3, 3, 'k2', 1, event_id => streamseal_test.uid(3))]) $$,
    '22023',
    'ingest: copy 00000000-0000-0000-0000-000000000003 (#2 of the batch): origin "ingest-bad-input" is this service: a copy cannot claim it',
    'a copy claiming this service as origin refuses the batch');
select throws_ok(
    $$ select streamseal.ingest(array[
           streamseal_test.copy('bad-src', 2, 2, 'k1', 2, event_id => streamseal_test.uid(2)),
           streamseal_test.copy('bad-src', 3, 3, null, 1, event_id => streamseal_test.uid(3))]) $$,
    '22023',
    'ingest: copy 00000000-0000-0000-0000-000000000003 (#2 of the batch): stream_id is required',
    'a null stream_id refuses the batch');
select throws_ok(
    $$ select streamseal.ingest(array[
           streamseal_test.copy('bad-src', 2, 2, 'k1', 2, event_id => streamseal_test.uid(2)),
           streamseal_test.copy('bad-src', null, 3, 'k2', 1, event_id => streamseal_test.uid(3))]) $$,
    '22023',
    'ingest: copy 00000000-0000-0000-0000-000000000003 (#2 of the batch): origin_seq is required (>= 1)',
    'a copy without origin_seq refuses the batch');
select throws_ok(
    $$ select streamseal.ingest(array[
           streamseal_test.copy('bad-src', 2, 2, 'k1', 2, event_id => streamseal_test.uid(2)),
           streamseal_test.copy('bad-src', 3, null, 'k2', 1, event_id => streamseal_test.uid(3))]) $$,
    '22023',
    'ingest: copy 00000000-0000-0000-0000-000000000003 (#2 of the batch): type_seq is required (>= 1)',
    'a copy without type_seq refuses the batch');
select throws_ok(
    $$ select streamseal.ingest(array[
           streamseal_test.copy('bad-src', 2, 2, 'k1', 2, event_id => streamseal_test.uid(2)),
           streamseal_test.copy('Bad Src', 3, 3, 'k2', 1, event_id => streamseal_test.uid(3))]) $$,
    '22023',
    'ingest: copy 00000000-0000-0000-0000-000000000003 (#2 of the batch): origin ''Bad Src'' is not a service name',
    'a copy whose origin is not a service name refuses the batch');
select throws_ok(
    $$ select streamseal.ingest(array[
           streamseal_test.copy('bad-src', 2, 2, 'k1', 2, event_id => streamseal_test.uid(2)),
           streamseal_test.copy('bad-src', 3, 3, 'k2', 1, event_id => streamseal_test.uid(3)),
           streamseal_test.copy('bad-src', 4, 4, 'k2', 2, event_id => streamseal_test.uid(3))]) $$,
    '22023',
    'ingest: event 00000000-0000-0000-0000-000000000003 appears more than once in the batch with different content',
    'one id with two contents refuses the batch');

select is((select count(*)::int from streamseal.events), 1, 'no refused copy was written');
select is_empty($$ select * from streamseal.events where event_id = streamseal_test.uid(2) $$,
    'not even the good copy at the head of the refused batches');
select bag_eq(
    $$ select origin, tenant, event_type, stream_id, x0, x1, n, updated_at from streamseal.stream_digests $$,
    $$ select * from digests_before $$,
    'the digests are unchanged, updated_at included');

select * from finish();
rollback;
