-- streamseal.version() names the installed code package as MAJOR.MINOR.PATCH (the scheme is in
-- sql/functions/version.sql): an application checks it before relying on the surface, so it is
-- callable with nothing else in place (no service name yet) and immutable.
begin;
select plan(3);

select matches(streamseal.version(), '^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$',
    'version() is MAJOR.MINOR.PATCH');
select lives_ok($$ select streamseal.version() $$, 'version() answers before the database has a service name');
select is((select provolatile from pg_proc where oid = 'streamseal.version()'::regprocedure), 'i'::"char",
    'version() is immutable');

select * from finish();
rollback;
