-- Invariant 4: closed epochs are immutable by a repeated close, and a lane's epoch width is pinned
-- at its first close, so boundaries that sealed folds were built on never move.
begin;
select plan(9);
select streamseal.set_service_name('epoch-width-pinned');

select streamseal.append(array(
    select streamseal_test.own('s' || (i % 4), i, case when i % 3 = 0 then 'b.done' else 'a.done' end,
                               event_id => streamseal_test.uid(i))
    from generate_series(1, 35) i order by i));
select streamseal.stamp();

select results_eq(
    $$ select epoch, forced from streamseal.close_epochs(width => 10) order by epoch $$,
    $$ values (0::bigint, false), (1, false), (2, false) $$,
    'the first close (width 10) closes epochs 0, 1, 2');

create temp table epochs_before on commit drop as select * from streamseal.digest_epochs;
create temp table prefix_before on commit drop as select * from streamseal.sealed_prefix;
create temp table frontier_before on commit drop as select * from streamseal.lane_epochs;

select is_empty($$ select * from streamseal.close_epochs(width => 10) $$,
    'a second close with nothing newly settled returns no rows');
select bag_eq($$ select * from streamseal.digest_epochs $$, $$ select * from epochs_before $$,
    'the second close changed no digest_epochs row');
select bag_eq(
    $$ select * from streamseal.sealed_prefix $$,
    $$ select * from prefix_before $$,
    'the second close changed no sealed_prefix row');
select bag_eq($$ select * from streamseal.lane_epochs $$, $$ select * from frontier_before $$,
    'the second close left the frontier (width, closed_through, advanced_at, blocked_since) untouched');

-- Width 7 would put epoch boundaries at 21 and 28 (both below the settled max 35) if it were honoured.
select is_empty($$ select * from streamseal.close_epochs(width => 7) $$,
    'a later call asking for width 7 closes nothing: the lane keeps width 10');

-- 20 more events: origin_seq 36..55.
select streamseal.append(array(
    select streamseal_test.own('s' || (i % 4), i, case when i % 3 = 0 then 'b.done' else 'a.done' end,
                               event_id => streamseal_test.uid(i))
    from generate_series(36, 55) i order by i));
select streamseal.stamp();

select results_eq(
    $$ select epoch, forced from streamseal.close_epochs(width => 7) order by epoch $$,
    $$ values (3::bigint, false), (4, false) $$,
    'after more events, a width-7 call closes epochs 3 and 4 on 10-wide boundaries (epoch 5 holds 55)');
select results_eq(
    $$ select width, closed_through from streamseal.lane_epochs where origin = 'epoch-width-pinned' $$,
    $$ values (10::bigint, 5::bigint) $$,
    'the frontier is still width 10, now closed through 5');
select bag_eq(
    $$ select epoch, tenant, event_type, x0, x1, n from streamseal.digest_epochs
       where origin = 'epoch-width-pinned' and epoch >= 3 $$,
    $$ select (i / 10)::bigint as epoch, 't1'::text as tenant,
              case when i % 3 = 0 then 'b.done' else 'a.done' end as event_type,
              bit_xor(hashtextextended(streamseal_test.uid(i)::text, 0)) as x0,
              bit_xor(hashtextextended(streamseal_test.uid(i)::text, 1)) as x1, count(*) as n
       from generate_series(30, 49) i group by 1, 2, 3 $$,
    'the new epochs fold origin_seq [30, 40) and [40, 50) exactly');

select * from finish();
rollback;
