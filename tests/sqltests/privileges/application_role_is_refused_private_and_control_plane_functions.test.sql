-- Invariants 6 and 12: the application role cannot move what the control plane decides. Private
-- helpers, the stamper, the ledger, checkpoint verification, seals and epochs refuse it
-- (EXECUTE is revoked from PUBLIC and granted only for the stated surface).
begin;
select plan(10);
select streamseal.set_service_name('privileges-refused');
create role privileges_refused_app nologin;
grant streamseal_application to privileges_refused_app;
set local role privileges_refused_app;

select throws_ok(
    $$ select streamseal._h0('00000000-0000-0000-0000-000000000001'::uuid) $$,
    '42501', 'permission denied for function _h0',
    'a private helper refuses the application role');
select throws_ok(
    $$ select streamseal._event_problem('t1', 's1', 1, 'thing.happened', 0, '\x7b7d'::bytea, null, 1, 1, 1) $$,
    '42501', 'permission denied for function _event_problem',
    'the append guard''s helper refuses the application role');
select throws_ok(
    $$ select * from streamseal.stamp() $$,
    '42501', 'permission denied for function stamp',
    'the stamper refuses the application role (only the control plane numbers events)');
select throws_ok(
    $$ select * from streamseal.ledger_observe('privileges-refused-src', '[]'::jsonb) $$,
    '42501', 'permission denied for function ledger_observe',
    'the repair ledger refuses the application role');
select throws_ok(
    $$ select * from streamseal.ledger_heal('privileges-refused-src', '[]'::jsonb) $$,
    '42501', 'permission denied for function ledger_heal',
    'healing a ledger bucket refuses the application role');
select throws_ok(
    $$ select * from streamseal.verify_checkpoint('privileges-refused-src', 0, 10, 'thing.happened',
           array['t1'], array[1::bigint], array[1::bigint], array[1::bigint], array['{}'::int8multirange]) $$,
    '42501', 'permission denied for function verify_checkpoint',
    'checkpoint verification refuses the application role');
select throws_ok(
    $$ select streamseal.advance_seal('privileges-refused-src', 100) $$,
    '42501', 'permission denied for function advance_seal',
    'advancing a seal refuses the application role');
select throws_ok(
    $$ select * from streamseal.close_epochs() $$,
    '42501', 'permission denied for function close_epochs',
    'closing epochs refuses the application role');
select throws_ok(
    $$ select streamseal.accept_loss('privileges-refused-src', 't1', 'thing.happened', '{[1,2)}', 'absent') $$,
    '42501', 'permission denied for function accept_loss',
    'accepting a loss refuses the application role');
select throws_ok(
    $$ select streamseal.grant_redelivery('privileges-refused-peer', array['thing.happened']) $$,
    '42501', 'permission denied for function grant_redelivery',
    'granting redelivery (an operator''s decision) refuses the application role');
reset role;

select * from finish();
rollback;
