-- Issue 16 (write cost) under invariant 7: the stamper numbers own events without touching their
-- rows. Each UPDATE of an indexed column wrote the event twice and left a dead tuple for vacuum
-- (dead_tuple_ratio 0.5 after a stamp); now numbers go to own_numbers and streamseal.events is
-- append-only. Witness: this transaction's row counters of events (pg_stat_xact_user_tables),
-- which count every updated and deleted tuple whether or not it was HOT.
begin;
select plan(4);
select streamseal.set_service_name('stamp-append-only');

select count(*) from streamseal.append(array(
    select streamseal_test.own('s' || (i % 7), i / 7 + 1, 'thing.' || (i % 3), event_id => streamseal_test.uid(i))
    from generate_series(1, 200) i order by i));

create temp table before_stamp on commit drop as
select n_tup_upd, n_tup_del from pg_stat_xact_user_tables where relid = 'streamseal.events'::regclass;

select results_eq($$ select stamped, last_origin_seq from streamseal.stamp() $$, $$ values (200, 200::bigint) $$,
    'fixture: the stamper numbered all 200 own events');
select is(
    (select x.n_tup_upd - b.n_tup_upd from pg_stat_xact_user_tables x, before_stamp b
     where x.relid = 'streamseal.events'::regclass),
    0::bigint, 'the stamp updated no row of events (no second version, no dead tuple)');
select is(
    (select x.n_tup_del - b.n_tup_del from pg_stat_xact_user_tables x, before_stamp b
     where x.relid = 'streamseal.events'::regclass),
    0::bigint, 'and deleted none');
select is(streamseal_test.digest_drift(), 0::bigint, 'the digests equal a recompute: the fold happened without the UPDATE');

select * from finish();
rollback;
