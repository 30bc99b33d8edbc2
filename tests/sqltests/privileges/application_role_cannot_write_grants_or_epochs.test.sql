-- Invariants 4 and 11: the application role grants no redelivery and writes no epoch (issue 14
-- item 6): grants say who may receive which types, epochs hold the sealed folds audits trust,
-- and neither moves but through the control plane's functions.
begin;
select plan(7);
select streamseal.set_service_name('privileges-grants');
create role privileges_grants_app nologin;
grant streamseal_application to privileges_grants_app;
set local role privileges_grants_app;

select throws_ok(
    $$ insert into streamseal.grants (service, event_type) values ('mallory', 'thing.happened') $$,
    '42501', 'permission denied for table grants', 'a plain INSERT into grants refuses the application role');
select throws_ok(
    $$ delete from streamseal.grants $$,
    '42501', 'permission denied for table grants', 'a DELETE from grants refuses the application role');
select throws_ok(
    $$ select streamseal.grant_redelivery('mallory', array['thing.happened']) $$,
    '42501', 'permission denied for function grant_redelivery', 'grant_redelivery refuses the application role');
select throws_ok(
    $$ insert into streamseal.digest_epochs (origin, epoch, tenant, event_type, x0, x1, n)
       values ('privileges-grants', 0, 't1', 'thing.happened', 1, 2, 1) $$,
    '42501', 'permission denied for table digest_epochs', 'an INSERT into digest_epochs refuses the application role');
select throws_ok(
    $$ update streamseal.digest_epochs set n = n + 1 $$,
    '42501', 'permission denied for table digest_epochs', 'an UPDATE of digest_epochs refuses the application role');
select throws_ok(
    $$ update streamseal.lane_epochs set width = 1 $$,
    '42501', 'permission denied for table lane_epochs', 'an UPDATE of lane_epochs refuses the application role');
select throws_ok(
    $$ select * from streamseal.close_epochs() $$,
    '42501', 'permission denied for function close_epochs', 'close_epochs refuses the application role');
reset role;

select * from finish();
rollback;
