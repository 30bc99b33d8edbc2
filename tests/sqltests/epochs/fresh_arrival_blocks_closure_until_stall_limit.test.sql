-- Invariant 4: an epoch holding an unsettled arrival stays open until the stall limit, then exactly
-- one blocked epoch is forced through per call; the forced fold is exact and the sweep checks it.
begin;
select plan(14);
select streamseal.set_service_name('epoch-stall');

-- Copies 1..45 from stall-origin, all stored two hours ago except origin_seq 23 (epoch 2) and
-- 34 (epoch 3), which arrive now.
select streamseal.ingest(array(
    select streamseal_test.copy('stall-origin', i, i, 'k' || (i % 2), i, event_id => streamseal_test.uid(i))
    from generate_series(1, 45) i where i not in (23, 34)));
update streamseal.events set stored_at = now() - interval '2 hours' where origin = 'stall-origin';
select streamseal.ingest(array[
    streamseal_test.copy('stall-origin', 23, 23, 'k1', 23, event_id => streamseal_test.uid(23)),
    streamseal_test.copy('stall-origin', 34, 34, 'k0', 34, event_id => streamseal_test.uid(34))]);

select results_eq(
    $$ select epoch, forced from streamseal.close_epochs(width => 10, settle => interval '1 hour') order by epoch $$,
    $$ values (0::bigint, false), (1, false) $$,
    'the first close stops below epoch 2, which holds the fresh copy 23');
select results_eq(
    $$ select closed_through, blocked_since from streamseal.lane_epochs where origin = 'stall-origin' $$,
    $$ values (2::bigint, now()) $$,
    'the frontier stops at 2 and records when epoch 2 was found blocked');

select is_empty(
    $$ select * from streamseal.close_epochs(width => 10, settle => interval '1 hour') $$,
    'a second call inside the stall limit still does not close epoch 2');
select is((select closed_through from streamseal.lane_epochs where origin = 'stall-origin'), 2::bigint,
    'the frontier has not moved');

-- The lane has been blocked for longer than the (default, 3600 s) stall limit.
update streamseal.lane_epochs set blocked_since = now() - interval '61 minutes' where origin = 'stall-origin';

select results_eq(
    $$ select epoch, forced from streamseal.close_epochs(width => 10, settle => interval '1 hour') $$,
    $$ values (2::bigint, true) $$,
    'past the stall limit exactly one epoch, 2, is forced through; epoch 3 (also blocked) is left for a later call');
select is((select closed_through from streamseal.lane_epochs where origin = 'stall-origin'), 3::bigint,
    'the frontier moved by one epoch');
select bag_eq(
    $$ select tenant, event_type, x0, x1, n from streamseal.digest_epochs where origin = 'stall-origin' and epoch = 2 $$,
    $$ select 't1'::text as tenant, 'thing.happened'::text as event_type,
              bit_xor(hashtextextended(streamseal_test.uid(i)::text, 0)) as x0,
              bit_xor(hashtextextended(streamseal_test.uid(i)::text, 1)) as x1, count(*) as n
       from generate_series(20, 29) i $$,
    'the forced epoch 2 folds all of origin_seq 20..29, the fresh copy 23 included');

-- With no stall limit, the remaining blocked epoch 3 gets through within two calls, forced, once.
create temp table later_closes on commit drop as
select * from streamseal.close_epochs(width => 10, settle => interval '1 hour', stall_limit => interval '0');
insert into later_closes
select * from streamseal.close_epochs(width => 10, settle => interval '1 hour', stall_limit => interval '0');
select results_eq(
    $$ select epoch, forced from later_closes $$,
    $$ values (3::bigint, true) $$,
    'epoch 3 is forced through exactly once; epoch 4 (holding the settled max 45) stays open');
-- A forced close keeps blocked_since: the lane stays past its limit, so each later call forces
-- the next blocked epoch instead of waiting a whole stall limit again.
select results_eq(
    $$ select closed_through, blocked_since is not null from streamseal.lane_epochs where origin = 'stall-origin' $$,
    $$ values (4::bigint, true) $$,
    'the frontier stands at 4 and still remembers it is stalled (forced closes keep blocked_since)');

select results_eq(
    $$ select * from streamseal.verify_digest_epochs() $$,
    $$ values ('stall-origin'::text, 4, 0, false) $$,
    'verify_digest_epochs checks the 4 closed epochs and finds no drift in the forced ones');

-- Sabotage the forced epoch's row; the sweep finds and heals it.
update streamseal.digest_epochs set x0 = x0 # 99 where origin = 'stall-origin' and epoch = 2;
select results_eq(
    $$ select * from streamseal.verify_digest_epochs() $$,
    $$ values ('stall-origin'::text, 4, 1, false) $$,
    'verify_digest_epochs reports the sabotaged epoch as the one drifted epoch (the prefix was intact)');
select bag_eq(
    $$ select tenant, event_type, x0, x1, n from streamseal.digest_epochs where origin = 'stall-origin' and epoch = 2 $$,
    $$ select * from streamseal._epoch_fold('stall-origin', 20, 30) $$,
    'the sabotaged epoch again equals _epoch_fold over [20, 30)');
select bag_eq(
    $$ select tenant, event_type, x0, x1, n from streamseal.sealed_prefix where origin = 'stall-origin' $$,
    $$ select * from streamseal._epoch_fold('stall-origin', 0, 40) $$,
    'the sealed prefix equals the fold of [0, 40)');
select results_eq(
    $$ select * from streamseal.verify_digest_epochs() $$,
    $$ values ('stall-origin'::text, 4, 0, false) $$,
    'a further verify finds nothing');

select * from finish();
rollback;
