-- Invariant 3 (identity) and 13 (bad input refused at the door): the service-name rule for an
-- event's origin, [a-z][a-z0-9-]{0,62}, holds at the table whichever statement writes (migration
-- 036 states it without a bounded repetition, for speed: same rule) and in ingest, which checks
-- it once per distinct origin of a batch: a bad origin after good copies of another origin still
-- names the first copy that carries it, and refuses the batch whole.
begin;
select plan(6);
select streamseal.set_service_name('origin-rule');

create temp table samples (origin text, ok boolean) on commit drop;
insert into samples values
    ('a', true), ('orders', true), ('order-2', true), ('a' || repeat('b', 62), true),
    ('a' || repeat('b', 63), false), ('Orders', false), ('2orders', false), ('-orders', false),
    ('or_ders', false), ('orders ', false), ('', false), ('ordérs', false), (E'orders\n', false);

select is((select count(*)::int from samples where (origin ~ '^[a-z][a-z0-9-]{0,62}$') <> ok), 0,
          'the samples state the service-name rule');

-- The table's check, through plain inserts (superuser: no trigger stands in the way of the check).
create function pg_temp.accepted(o text) returns boolean language plpgsql as $$
begin
    begin
        insert into streamseal.events (event_id, origin, origin_seq, type_seq, tenant, stream_id, stream_version, event_type, payload)
        values (gen_random_uuid(), o, 1, 1, '', 's', 1, 't', '');
    exception when check_violation then
        return false;
    end;
    delete from streamseal.events where origin = o;
    return true;
exception when others then
    raise;
end
$$;
select is((select count(*)::int from samples where pg_temp.accepted(origin) <> ok), 0,
          'the table accepts exactly the origins the rule accepts');
select is((select count(*)::int from samples where not ok and pg_temp.accepted(origin)), 0,
          'no origin the rule refuses is stored');

select throws_ok(
    $$ select streamseal.ingest(array[
           streamseal_test.copy('good-src', 1, 1, 'k1', 1, event_id => streamseal_test.uid(1)),
           streamseal_test.copy('good-src', 2, 2, 'k1', 2, event_id => streamseal_test.uid(2)),
           streamseal_test.copy('Bad', 3, 3, 'k2', 1, event_id => streamseal_test.uid(3)),
           streamseal_test.copy('Bad', 4, 4, 'k2', 2, event_id => streamseal_test.uid(4))]) $$,
    '22023',
    'ingest: copy 00000000-0000-0000-0000-000000000003 (#3 of the batch): origin ''Bad'' is not a service name',
    'ingest names the first copy of a bad origin');
select throws_ok(
    $$ select streamseal.ingest(array[
           streamseal_test.copy('good-src', 1, 1, 'k1', 1, event_id => streamseal_test.uid(1)),
           streamseal_test.copy('a' || repeat('b', 63), 2, 2, 'k1', 2, event_id => streamseal_test.uid(2))]) $$,
    '22023',
    pg_catalog.format('ingest: copy 00000000-0000-0000-0000-000000000002 (#2 of the batch): origin %L is not a service name', 'a' || repeat('b', 63)),
    'a 64-character origin is refused by ingest');
select is((select count(*)::int from streamseal.events), 0, 'nothing of a refused batch is stored');

select * from finish();
rollback;
