-- Invariant 4: ephemeral (flag 1) and at-most-once (flag 2) events stay outside every digest,
-- through append + stamp and through ingest; state-only (flag 4) events count; reaping
-- ephemeral events moves no digest.
begin;
select plan(9);
select streamseal.set_service_name('digest-flags');

select streamseal.append(array[
    streamseal_test.own('own', 1, flags => 0, event_id => streamseal_test.uid(1)),
    streamseal_test.own('own', 2, flags => 1, event_id => streamseal_test.uid(2)),
    streamseal_test.own('own', 3, flags => 2, event_id => streamseal_test.uid(3)),
    streamseal_test.own('own', 4, flags => 4, event_id => streamseal_test.uid(4)),
    streamseal_test.own('own', 5, flags => 5, event_id => streamseal_test.uid(5))]);
select streamseal.stamp();
select streamseal.ingest(array[
    streamseal_test.copy('flags-src', 1, 1, 'cp', 1, flags => 0, event_id => streamseal_test.uid(11)),
    streamseal_test.copy('flags-src', 2, 2, 'cp', 2, flags => 1, event_id => streamseal_test.uid(12)),
    streamseal_test.copy('flags-src', 3, 3, 'cp', 3, flags => 2, event_id => streamseal_test.uid(13)),
    streamseal_test.copy('flags-src', 4, 4, 'cp', 4, flags => 4, event_id => streamseal_test.uid(14)),
    streamseal_test.copy('flags-src', 5, 5, 'cp', 5, flags => 6, event_id => streamseal_test.uid(15)),
    streamseal_test.copy('flags-src', 6, 6, 'only-flagged', 1, flags => 1, event_id => streamseal_test.uid(21)),
    streamseal_test.copy('flags-src', 7, 7, 'only-flagged', 2, flags => 2, event_id => streamseal_test.uid(22))]);

select is((select count(*)::int from streamseal.numbered_events where origin = 'digest-flags' and origin_seq is not null), 5,
    'all 5 own events were stamped, flagged or not');
select results_eq(
    $$ select x0, x1, n from streamseal.stream_digests where origin = 'digest-flags' and stream_id = 'own' $$,
    $$ select bit_xor(hashtextextended(u::text, 0)), bit_xor(hashtextextended(u::text, 1)), count(*)
       from unnest(array[streamseal_test.uid(1), streamseal_test.uid(4)]) u $$,
    'the own bucket folds only the unflagged and the state-only event');
select results_eq(
    $$ select x0, x1, n from streamseal.stream_digests where origin = 'flags-src' and stream_id = 'cp' $$,
    $$ select bit_xor(hashtextextended(u::text, 0)), bit_xor(hashtextextended(u::text, 1)), count(*)
       from unnest(array[streamseal_test.uid(11), streamseal_test.uid(14)]) u $$,
    'the copies'' bucket folds only the unflagged and the state-only copy');
select is_empty(
    $$ select * from streamseal.stream_digests where origin = 'flags-src' and stream_id = 'only-flagged' $$,
    'a stream of only ephemeral and at-most-once copies gets no digest row');
select bag_eq(
    $$ select origin, tenant, event_type, stream_id, x0, x1, n from streamseal.stream_digests $$,
    $$ select * from streamseal.recompute_digests() $$,
    'recompute_digests agrees: the flagged events are outside the fold');

-- Reaping: every event stored an hour ago; buckets backdated so any touch shows.
update streamseal.events set stored_at = now() - interval '1 hour'
where origin in ('digest-flags', 'flags-src');
update streamseal.stream_digests set updated_at = '2000-01-01' where origin in ('digest-flags', 'flags-src');
-- A checkpoint covered the own events (an origin reaps its own only then: reap_ephemeral).
update streamseal.checkpoint_state set published_through = 6;
create temp table digests_before on commit drop as
select origin, tenant, event_type, stream_id, x0, x1, n, updated_at from streamseal.stream_digests;

select is(streamseal.reap_ephemeral(interval '0'), 4::bigint, 'reap_ephemeral removes the 4 ephemeral events');
select bag_eq(
    $$ select event_id from streamseal.numbered_events where origin in ('digest-flags', 'flags-src') $$,
    $$ values (streamseal_test.uid(1)), (streamseal_test.uid(3)), (streamseal_test.uid(4)),
              (streamseal_test.uid(11)), (streamseal_test.uid(13)), (streamseal_test.uid(14)),
              (streamseal_test.uid(15)), (streamseal_test.uid(22)) $$,
    'only ephemeral events were reaped; at-most-once and state-only ones stay');
select bag_eq(
    $$ select origin, tenant, event_type, stream_id, x0, x1, n, updated_at from streamseal.stream_digests $$,
    $$ select * from digests_before $$,
    'reaping moved no digest, not even updated_at');
select is(streamseal_test.digest_drift(), 0::bigint, 'the digests still equal a recompute');

select * from finish();
rollback;
