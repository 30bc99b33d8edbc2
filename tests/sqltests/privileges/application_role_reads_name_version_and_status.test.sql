-- Invariant 1 made visible: an application reads what streamseal knows about its integrity (the
-- tables `streamseal status` reads: known_origins, seals, lanes, repair_ledger) and its own name,
-- subscriptions and the code package's version, through the application role alone.
begin;
select plan(8);
select streamseal.set_service_name('privileges-reader');
-- Status as the control plane leaves it, written here as the owner.
select streamseal.observe_origin('privileges-reader-src', 'streamseal.ctl.privileges-reader-src', 60, 3, 40);
select streamseal.advance_seal('privileges-reader-src', 30);
insert into streamseal.lanes (origin, tenant, event_type, floor, birth_floor, last_type_seq, confirmed, confirmed_since)
values ('privileges-reader-src', 't1', 'thing.happened', 4, 0, 9, '{[5,7)}', now());
insert into streamseal.repair_ledger (origin, tenant, event_type, stream_id, reason, local_x0, local_x1, local_n,
                                      origin_x0, origin_x1, origin_n, first_seen_at, last_reported_at)
values ('privileges-reader-src', 't1', 'thing.happened', 'pr-s1', 'deficit', 1, 2, 1, 3, 4, 2, now(), now());
select streamseal.subscribe_all_tenants(array['thing.happened'], 'privileges-reader-src');

create role privileges_reader_app nologin;
grant streamseal_application to privileges_reader_app;
set local role privileges_reader_app;

select is(streamseal.service_name(), 'privileges-reader', 'the application role reads the service name');
select matches(streamseal.version(), '^[0-9]+\.[0-9]+\.[0-9]+$', 'the application role reads the code package version');
select ok(streamseal.subscribed('privileges-reader-src', 'acme', 'thing.happened'),
    'the application role reads whether it consumes a type');
-- The statements `streamseal status` runs (controlplane/status), as the application role.
select results_eq(
    $$ select k.origin, k.silent_since is not null, coalesce(k.generation, 0), coalesce(s.sealed_through, 0)
       from streamseal.known_origins k left join streamseal.seals s on s.origin = k.origin
       where k.origin = 'privileges-reader-src' $$,
    $$ values ('privileges-reader-src'::text, false, 3::bigint, 30::bigint) $$,
    'the application role reads known origins and their seals');
select results_eq(
    $$ select tenant, event_type, floor, confirmed::text, accepted_losses::text
       from streamseal.lanes where origin = 'privileges-reader-src' $$,
    $$ values ('t1'::text, 'thing.happened'::text, 4::bigint, '{[5,7)}'::text, '{}'::text) $$,
    'the application role reads lanes: floor and holes');
select results_eq(
    $$ select reason, count(*)::int, (count(*) filter (where exhausted_at is not null))::int
       from streamseal.repair_ledger where origin = 'privileges-reader-src' group by reason $$,
    $$ values ('deficit'::text, 1, 0) $$,
    'the application role reads the repair ledger');
select is(current_user, 'privileges_reader_app'::name, 'every read above ran as the application role');
reset role;
select is((select sealed_through from streamseal.seals where origin = 'privileges-reader-src'), 30::bigint,
    'reading changed nothing');

select * from finish();
rollback;
