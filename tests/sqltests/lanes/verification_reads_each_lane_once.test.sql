-- Invariant 8 (bounded cost): verifying a checkpoint computes a lane's missing type_seqs once.
-- Left to CTE inlining, every later reference to "missing" in verify_checkpoint became its own
-- call of _lane_missing (nine per lane), and with a thousand holes each call read the lane again:
-- a checkpoint round of a half-lost lane took seconds instead of milliseconds. Function call
-- counts need track_functions, which only a superuser may set; otherwise the count is skipped.
begin;
select plan(3);
select streamseal.set_service_name('lane-read-once');
select streamseal.subscribe_all_tenants(array['once.type'], 'once-origin');

-- Every other type_seq of 1..400 is held: 200 scattered holes.
select streamseal.ingest(array(
    select streamseal_test.copy('once-origin', i, i, 'o1', i, 'once.type', event_id => streamseal_test.uid(i))
    from generate_series(1, 400) i where i % 2 = 0));

select set_config('track_functions', 'all', true)
from pg_catalog.pg_roles where rolname = current_user and rolsuper;

select results_eq(
    $$ select floor, pg_catalog.cardinality(array(select pg_catalog.unnest(suspected)))
       from streamseal.verify_checkpoint('once-origin', 1, 401, 'once.type', array['t1'],
           array[400]::bigint[], array[1]::bigint[], array[400]::bigint[], array['{}']::int8multirange[]) $$,
    $$ values (0::bigint, 200) $$,
    'fixture: the first checkpoint suspects the 200 holes');
select results_eq(
    $$ select floor, pg_catalog.cardinality(array(select pg_catalog.unnest(confirmed)))
       from streamseal.verify_checkpoint('once-origin', 401, 401, 'once.type', array['t1'],
           array[0]::bigint[], array[null]::bigint[], array[null]::bigint[], array['{}']::int8multirange[]) $$,
    $$ values (0::bigint, 200) $$,
    'fixture: the next checkpoint confirms them');

select * from (
    select case when current_setting('track_functions') = 'all' then
        is(pg_catalog.pg_stat_get_xact_function_calls('streamseal._lane_missing'::regproc)::int, 2,
           'two checkpoints of one lane computed its missing type_seqs twice, once each')
    else
        skip('track_functions needs a superuser: the call count is not observable')
    end
) t;

select * from finish();
rollback;
