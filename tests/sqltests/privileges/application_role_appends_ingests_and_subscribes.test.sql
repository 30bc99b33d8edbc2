-- Invariant 4 through the application surface: a role granted streamseal_application, holding no
-- table privilege of its own, appends (both forms), ingests a copy and subscribes / unsubscribes,
-- and the triggers still keep the digests exact for what it wrote.
begin;
select plan(8);
select streamseal.set_service_name('privileges-writer');
create role privileges_writer_app nologin;
grant streamseal_application to privileges_writer_app;
grant usage on schema streamseal_test to privileges_writer_app; -- the row builders, nothing else
set local role privileges_writer_app;

select results_eq(
    $$ select streamseal.append(array[streamseal_test.own('pw-s1', 1, event_id => streamseal_test.uid(1))]) $$,
    $$ values (streamseal_test.uid(1)) $$,
    'the application role appends a batch of own events');
select is(
    streamseal.append('t1', 'pw-s1', 2, 'thing.happened', '\x7b7d'::bytea, event_id => streamseal_test.uid(2)),
    streamseal_test.uid(2),
    'the application role appends one own event');
select results_eq(
    $$ select streamseal.ingest(array[streamseal_test.copy('privileges-src', 1, 1, 'pw-c1', 1,
                                                           event_id => streamseal_test.uid(3))]) $$,
    $$ values (streamseal_test.uid(3)) $$,
    'the application role ingests a copy from another origin');
select is(streamseal.subscribe_all_tenants(array['thing.happened'], 'privileges-src'), 1, 'the application role subscribes');
select is(streamseal.unsubscribe_all_tenants(array['thing.happened'], 'privileges-src'), 1, 'the application role unsubscribes');
select is(current_user, 'privileges_writer_app'::name, 'every call above ran as the application role');
reset role;

select is((select count(*)::int from streamseal.events
           where event_id in (streamseal_test.uid(1), streamseal_test.uid(2), streamseal_test.uid(3))), 3,
    'every event the application role wrote is stored');
select is(
    (select n from streamseal.stream_digests where origin = 'privileges-src' and stream_id = 'pw-c1'), 1::bigint,
    'the insert trigger folded the copy the application role ingested');

select * from finish();
rollback;
