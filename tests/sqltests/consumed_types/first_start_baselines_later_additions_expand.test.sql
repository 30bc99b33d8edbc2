-- Invariant 1 (no silent loss, Phase S): the consumed-type registry tells a first start from
-- growth. The first start records what is consumed as baseline (nothing existed to miss, no
-- request); a restart with unchanged consumption changes nothing; a type added later (a restart
-- or `subscribe` at run time) is an expansion: pending, born with the known origins' positions.
-- A type no longer consumed is dropped, so consuming it again is a new expansion.
begin;
select plan(11);
select streamseal.set_service_name('ct-billing');
select streamseal.subscribe_all_tenants(array['ct.placed', 'ct.paid']);

select is((select count(*)::int from streamseal.consumed_types_reconcile(false)), 0,
          'a run-time reconcile before the first start baselines nothing');
select results_eq($$ select event_type, change from streamseal.consumed_types_reconcile(true) order by 1 $$,
                  $$ values ('ct.paid', 'baseline'), ('ct.placed', 'baseline') $$,
                  'the first start records everything consumed as baseline');
select is((select count(*)::int from streamseal.consumed_types_reconcile(true)), 0,
          'a restart with unchanged consumption changes nothing');
select is((select count(*)::int from streamseal.backfill_due(interval '1 minute')), 0,
          'baseline types are never due for backfill');

insert into streamseal.known_origins (origin, control_subject, interval_seconds, last_checkpoint_at, last_window_to)
values ('ct-orders', 'streamseal.ctl.ct-orders', 60, now(), 5001);
select streamseal.subscribe_all_tenants(array['ct.shipped']);
select results_eq($$ select event_type, change from streamseal.consumed_types_reconcile(false) $$,
                  $$ values ('ct.shipped', 'expansion') $$,
                  'a type subscribed at run time is an expansion');
select is((select status || ' ' || (birth_positions ->> 'ct-orders') from streamseal.consumed_types where event_type = 'ct.shipped'),
          'pending 5001', 'the expansion is pending, born at the known origin''s checkpoint position');
select results_eq($$ select * from streamseal.backfill_due(interval '1 minute') $$, $$ values ('ct.shipped') $$,
                  'the pending expansion is due');

select results_eq($$ select * from streamseal.backfill_claim(interval '1 minute', 'd0000000-0000-0000-0000-000000000001') $$,
                  $$ values ('ct.shipped') $$, 'a claim takes the due expansion and marks it requested');
select is_empty($$ select * from streamseal.backfill_claim(interval '1 minute', 'd0000000-0000-0000-0000-000000000002') $$,
                'a second claim (another replica) finds nothing due: one broadcast per expansion');

select streamseal.unsubscribe_all_tenants(array['ct.paid']);
select results_eq($$ select event_type, change from streamseal.consumed_types_reconcile(true) $$,
                  $$ values ('ct.paid', 'dropped') $$, 'a type no longer consumed is dropped');
select streamseal.subscribe_all_tenants(array['ct.paid']);
select results_eq($$ select event_type, change from streamseal.consumed_types_reconcile(true) $$,
                  $$ values ('ct.paid', 'expansion') $$, 'consuming it again on a restart is an expansion');

select * from finish();
rollback;
