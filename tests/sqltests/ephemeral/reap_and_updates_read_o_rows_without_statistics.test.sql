-- Invariant 8 (maintenance costs what it touches, never the lane): with 20 000 own events
-- numbered in own_numbers (issue 16) and neither table analyzed (a new store after a bulk load),
-- reaping a few ephemeral events and updating a few own events' flags read those rows' numbers by
-- event_id, not the whole own_numbers table. Rows read come from streamseal_test.rows_read.
begin;
select plan(4);
select streamseal.set_service_name('reap-unanalyzed');

-- Every 1000th event ephemeral (flag 1): 20 of them.
select streamseal_test.own_history(20000, ephemeral_every => 1000);
update streamseal.checkpoint_state set published_through = 20001;
-- Stored an hour ago, so past the reaper's grace.
update streamseal.events set stored_at = now() - interval '1 hour' where flags = 1;

create temp table reads (what text, numbers bigint, touched bigint) on commit drop;
create function pg_temp.measure(what text, query text) returns void language plpgsql as $$
declare
    n0 bigint := streamseal_test.rows_read('own_numbers');
    got bigint;
begin
    execute query into got;
    insert into reads values (what, streamseal_test.rows_read('own_numbers') - n0, got);
end
$$;

select pg_temp.measure('reap', $q$ select streamseal.reap_ephemeral(interval '0', 100) $q$);
select pg_temp.measure('update', $q$ with u as (update streamseal.events set flags = 1
    where event_id in (select streamseal_test.uid(i) from generate_series(2, 11) i) returning 1)
    select count(*) from u $q$);

select results_eq($$ select what, touched from reads order by what $$,
    $$ values ('reap', 20::bigint), ('update', 10::bigint) $$,
    'fixture: the 20 ephemeral events reaped, 10 events updated');
select cmp_ok((select numbers from reads where what = 'reap'), '<=', 100::bigint,
    'the reap read the numbers of its 20 events, not the 20 000-row table');
select cmp_ok((select numbers from reads where what = 'update'), '<=', 100::bigint,
    'the update read the numbers of its 10 events');
select is((select count(*)::int from streamseal.own_numbers where flags = 1), 10,
    'the updated flags followed the events into own_numbers (the 20 reaped ones went with their rows)');

select * from finish();
rollback;
