-- Invariant 12 (a change of state comes from who it names) for registration: register_projection
-- runs with its owner's rights (SECURITY DEFINER), where current_user is the owner, who may
-- execute any function. Its guard therefore judges session_user, the role that logged in (or that
-- a superuser made the session's with SET SESSION AUTHORIZATION), so a role granted the
-- application surface but not EXECUTE on a function cannot make the control plane run that
-- function as a handler or a reset hook, and no SET ROLE it can make changes that: what it proves
-- is that the guard reads neither the definer's rights nor the role the session switched to. The
-- flip side, pinned here too: a NOINHERIT login whose EXECUTE comes only from a role it must SET
-- ROLE to is refused as well (grant EXECUTE to the login role, or a role it inherits).
begin;
select plan(6);
select streamseal.set_service_name('proj-privilege');
create schema proj_priv;
create function proj_priv.fold(e streamseal.handler_event) returns void language sql as $$ select $$;
create function proj_priv.reset(origin text, tenant text, stream_id text) returns void language sql as $$ select $$;
revoke execute on function proj_priv.fold(streamseal.handler_event) from public;
revoke execute on function proj_priv.reset(text, text, text) from public;

-- owner: the application role and EXECUTE on both; intruder: the application role only;
-- halfway: EXECUTE on the handler, not on the reset hook; detour: NOINHERIT member of owner.
create role proj_priv_owner nologin;
create role proj_priv_intruder nologin;
create role proj_priv_halfway nologin;
create role proj_priv_detour nologin noinherit;
grant streamseal_application to proj_priv_owner, proj_priv_intruder, proj_priv_halfway;
grant proj_priv_owner to proj_priv_detour;
grant usage on schema proj_priv to proj_priv_owner, proj_priv_intruder, proj_priv_halfway, proj_priv_detour, streamseal_application;
grant execute on function proj_priv.fold(streamseal.handler_event), proj_priv.reset(text, text, text) to proj_priv_owner;
grant execute on function proj_priv.fold(streamseal.handler_event) to proj_priv_halfway;

set local session authorization proj_priv_intruder;
select throws_ok($$ select streamseal.register_projection('priv-p', array['priv.t'], 'proj_priv.fold') $$, '42501',
    'register_projection: role proj_priv_intruder may not execute proj_priv.fold or its reset hook',
    'a role without EXECUTE on the handler is refused, though the function''s owner could run it');
set local role streamseal_application;
select throws_ok($$ select streamseal.register_reactor('priv-r', array['priv.t'], 'proj_priv.fold') $$, '42501',
    'register_reactor: role proj_priv_intruder may not execute proj_priv.fold or its reset hook',
    'and after SET ROLE it is still the login role that is judged');
reset role;

set local session authorization proj_priv_halfway;
select throws_ok($$ select streamseal.register_projection('priv-p', array['priv.t'], 'proj_priv.fold', reset => 'proj_priv.reset') $$,
    '42501', 'register_projection: role proj_priv_halfway may not execute proj_priv.fold or proj_priv.reset',
    'a reset hook the role may not execute is refused too');

set local session authorization proj_priv_detour;
set local role proj_priv_owner;
select throws_ok($$ select streamseal.register_projection('priv-p', array['priv.t'], 'proj_priv.fold') $$, '42501',
    'register_projection: role proj_priv_detour may not execute proj_priv.fold or its reset hook',
    'a NOINHERIT login is refused even after SET ROLE to a role holding EXECUTE: the login is judged');
reset role;

set local session authorization proj_priv_owner;
select is(streamseal.register_projection('priv-p', array['priv.t'], 'proj_priv.fold', reset => 'proj_priv.reset'), 'registered',
    'a role that may execute both registers');
reset session authorization;
select is((select count(*) from streamseal.handlers where name in ('priv-p', 'priv-r')), 1::bigint,
    'only the permitted registration was recorded');

select * from finish();
rollback;
