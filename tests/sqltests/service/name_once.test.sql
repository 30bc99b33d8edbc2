-- Invariant 3: a database names its service once and never renames it, and stores nothing before
-- it has a name: every copy elsewhere carries that name as its origin.
-- (This file deliberately calls set_service_name after the unnamed-database checks.)
begin;
select plan(11);

select throws_ok(
    $$ select streamseal.append(array[streamseal_test.own('s1', 1)]) $$,
    '55000', 'this database has no service name: call streamseal.set_service_name(name) first',
    'append before the database is named is refused');
select throws_ok(
    $$ select streamseal.ingest(array[streamseal_test.copy('name-src', 1, 1, 's1', 1)]) $$,
    '55000', 'this database has no service name: call streamseal.set_service_name(name) first',
    'ingest before the database is named is refused');
select throws_ok(
    $$ select streamseal.set_service_name('Name-Once') $$,
    '22023', 'service name ''Name-Once'' is invalid: expected [a-z][a-z0-9-]{0,62}',
    'an upper-case name is refused');
select throws_ok(
    $$ select streamseal.set_service_name(repeat('n', 64)) $$,
    '22023', format('service name %L is invalid: expected [a-z][a-z0-9-]{0,62}', repeat('n', 64)),
    'a 64-character name is refused');
select throws_ok(
    $$ select streamseal.service_name() $$,
    '55000', 'this database has no service name: call streamseal.set_service_name(name) first',
    'refused names leave the database unnamed');

select is(streamseal.set_service_name('name-once'), 'name-once', 'a valid name is set');
select is(streamseal.set_service_name('name-once'), 'name-once', 'the same name again is a no-op');
select results_eq($$ select name from streamseal.service $$, $$ values ('name-once') $$,
    'one service row holds the name');
select throws_ok(
    $$ select streamseal.set_service_name('name-twice') $$,
    '55000', 'this database belongs to service "name-once": it cannot be renamed "name-twice"',
    'a different name is refused');
select is(streamseal.service_name(), 'name-once', 'the first name stands');
select lives_ok(
    $$ select streamseal.append(array[streamseal_test.own('s1', 1)]) $$,
    'once named, the database stores own events');

select * from finish();
rollback;
