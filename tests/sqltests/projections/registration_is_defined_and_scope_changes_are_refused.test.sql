-- Invariant 15 for handlers (a reader never skips) and invariant 13 (bad input is refused with a
-- reason): registering again over the same scope keeps the token and cursors; a new function is
-- taken; another scope or kind is refused (its state was built over the old one) until the
-- handler is unregistered, which removes its token, cursors and failures.
begin;
select plan(10);
select streamseal.set_service_name('proj-register');
create schema proj_reg;
create function proj_reg.a(e streamseal.handler_event) returns void language sql as $$ select $$;
create function proj_reg.b(e streamseal.handler_event) returns void language sql as $$ select $$;
create function proj_reg.wrong(e jsonb) returns void language sql as $$ select $$;
create function proj_reg.reset(origin text, tenant text, stream_id text) returns void language sql as $$ select $$;

select is(streamseal.register_projection('reg-p', array['b.type', 'a.type', 'a.type'], 'proj_reg.a'), 'registered',
    'a new projection registers');
select streamseal.append(array[streamseal_test.own('s1', 1, 'a.type')]);
select streamseal.stamp();
select streamseal.run_handler('reg-p');
select is(streamseal.register_projection('reg-p', array['a.type', 'b.type'], 'proj_reg.a'), 'unchanged',
    'the same registration (types as a set) changes nothing');
select is((select count(*) from streamseal.projection_cursors where projection = 'reg-p'), 1::bigint,
    'and keeps the cursors');
select is(streamseal.register_projection('reg-p', array['a.type', 'b.type'], 'proj_reg.b', reset => 'proj_reg.reset'), 'updated',
    'a new handler or reset function is taken, token and cursors kept');
select throws_ok($$ select streamseal.register_projection('reg-p', array['a.type'], 'proj_reg.b') $$, '22023',
    'register_projection: ''reg-p'' is registered as a projection over types {a.type,b.type} and tenants all: a handler''s scope or kind does not change under its state; call streamseal.unregister_handler(''reg-p'') and register it again (its state is yours to clear)',
    'another scope is refused, naming what to do');
select throws_ok($$ select streamseal.register_reactor('reg-p', array['a.type', 'b.type'], 'proj_reg.b') $$, '22023', null,
    'another kind is refused');
select throws_ok($$ select streamseal.register_projection('reg-q', array['a.type'], 'proj_reg.wrong') $$, '22023',
    'register_projection: handler proj_reg.wrong takes (jsonb): expected a function of (streamseal.handler_event)',
    'a handler of the wrong signature is refused');
select throws_ok($$ select streamseal.register_projection('Bad Name', array['a.type'], 'proj_reg.a') $$, '22023',
    'register_projection: name ''Bad Name'' is invalid: expected [a-z][a-z0-9_.-]{0,62}', 'a bad name is refused');
select is(streamseal.unregister_handler('reg-p'), true, 'unregistering says it was registered');
select is((select count(*) from streamseal.projection_cursors where projection = 'reg-p'), 0::bigint,
    'and its cursors are gone');

select * from finish();
rollback;
