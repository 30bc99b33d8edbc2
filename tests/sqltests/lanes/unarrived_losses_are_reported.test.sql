-- Invariants 1 and 6: what a lane accepts instead of repairing leaves a report an operator reads
-- (loss_reports): an at-most-once occurrence that never arrived is reported by the checkpoint
-- that announced it, with its window and count, once (a redelivered checkpoint reports nothing
-- again), and never requested; one that arrived is no loss. An origin's reaped_ephemeral answer,
-- accepted as loss, is reported with its reason.
begin;
select plan(6);
select streamseal.set_service_name('loss-consumer');
select streamseal.subscribe_all_tenants(array['tick.fired', 'blip'], 'loss-origin');

-- tick.fired 1..6, at-most-once 2, 3 and 5: 3 and 5 never arrived.
select streamseal.ingest(array(
    select streamseal_test.copy('loss-origin', i, i, 'a1', i, 'tick.fired', flags => case when i = 2 then 2 else 0 end)
    from generate_series(1, 6) i where i not in (3, 5)));

select results_eq(
    $$ select tenant, floor, confirmed, to_request from streamseal.verify_checkpoint('loss-origin', 1, 7, 'tick.fired',
           array['t1'], array[3]::bigint[], array[1]::bigint[], array[6]::bigint[], array['{[2,4),[5,6)}']::int8multirange[]) $$,
    $$ values ('t1'::text, 6::bigint, '{}'::int8multirange, '{}'::int8multirange) $$,
    'the occurrences are no holes and nothing is requested');
select results_eq(
    $$ select origin, tenant, event_type, reason, type_seqs, n, window_from, window_to from streamseal.loss_reports $$,
    $$ values ('loss-origin'::text, 't1'::text, 'tick.fired'::text, 'at_most_once'::text, '{[3,4),[5,6)}'::int8multirange,
               2::bigint, 1::bigint, 7::bigint) $$,
    'the two that never arrived are reported with the window that announced them; the one that arrived is not');

-- The same checkpoint again (a redelivery of the message): nothing new.
select results_eq(
    $$ select floor from streamseal.verify_checkpoint('loss-origin', 1, 7, 'tick.fired',
           array['t1'], array[3]::bigint[], array[1]::bigint[], array[6]::bigint[], array['{[2,4),[5,6)}']::int8multirange[]) $$,
    $$ values (6::bigint) $$, 'fixture: the checkpoint verified again');
select is((select count(*) from streamseal.loss_reports)::int, 1, 'a redelivered checkpoint reports nothing twice');

-- blip 1..4, 3 lost and confirmed; the origin answers it was reaped.
select streamseal.ingest(array(
    select streamseal_test.copy('loss-origin', 10 + i, i, 'b1', i, 'blip', flags => 1)
    from generate_series(1, 4) i where i <> 3));
select streamseal.verify_checkpoint('loss-origin', 11, 15, 'blip', array['t1'], array[4]::bigint[], array[1]::bigint[],
                                    array[4]::bigint[], array['{}']::int8multirange[]);
select streamseal.verify_checkpoint('loss-origin', 15, 15, 'blip', array['t1'], array[0]::bigint[], array[null]::bigint[],
                                    array[null]::bigint[], array['{}']::int8multirange[]);
select streamseal.accept_loss('loss-origin', 't1', 'blip', '{[3,4)}', 'reaped_ephemeral');
select streamseal.accept_loss('loss-origin', 't1', 'blip', '{[3,4)}', 'reaped_ephemeral');
select results_eq(
    $$ select event_type, reason, type_seqs, n, window_from from streamseal.loss_reports where event_type = 'blip' $$,
    $$ values ('blip'::text, 'reaped_ephemeral'::text, '{[3,4)}'::int8multirange, 1::bigint, null::bigint) $$,
    'the reaped event is reported once as reaped_ephemeral');
select results_eq(
    $$ select floor, confirmed, accepted_losses from streamseal.lanes where event_type = 'blip' $$,
    $$ values (4::bigint, '{}'::int8multirange, '{[3,4)}'::int8multirange) $$,
    'and accepted: the floor passes it');

select * from finish();
rollback;
