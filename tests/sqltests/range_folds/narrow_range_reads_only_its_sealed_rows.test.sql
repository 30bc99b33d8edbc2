-- Invariant 8 (bounded cost): a drill-down step over a narrow tenant key range reads the sealed
-- rows of that range by the tenant-key indexes (migration 027), not every (tenant, type) pair of
-- the lane: the origin's database time for a deep step does not grow with the tenant count.
-- Rows read come from streamseal_test.rows_read.
begin;
select plan(4);
select streamseal.set_service_name('rf-cost');
select streamseal.grant_redelivery_all_tenants('rf-cost-auditor', array['cost.happened']);
select streamseal.subscribe_all_tenants(array['cost.happened'], 'rf-cost-remote');

-- 4000 settled copies of 4000 tenants (one event each), closed into epochs of 1000: the whole
-- lane's history lies in sealed_prefix, one row per tenant.
select count(*) from streamseal.ingest(array(
    select streamseal_test.copy('rf-cost-remote', i, 1, 's' || i, 1, 'cost.happened', tenant => 'c' || lpad(i::text, 4, '0'),
                                event_id => streamseal_test.uid(93000 + i))
    from generate_series(1, 4000) i));
update streamseal.events set stored_at = now() - interval '2 hours' where origin = 'rf-cost-remote';
select count(*) from streamseal.close_epochs(100, 1000, interval '1 hour', interval '1 hour');
analyze streamseal.sealed_prefix;
select is((select count(*)::int from streamseal.sealed_prefix where origin = 'rf-cost-remote'), 3999,
          'fixture: the lane''s pairs are sealed but the one in the open epoch');

create temp table read_before on commit drop as
select streamseal_test.rows_read('sealed_prefix') as sealed, streamseal_test.rows_read('digest_epochs') as epochs;

-- A range of 1/256 of the key space: about 16 of the 4000 tenants.
create temp table narrow on commit drop as
select * from streamseal.answer_range_folds('rf-cost-auditor', 'rf-cost-remote', 0, 4001, array['cost.happened'],
                                            array[null]::text[], 0, streamseal.tenant_key_end() / 256, 16);
select cmp_ok((select sum(pairs)::int from narrow), '<', 60, 'fixture: the narrow range folds a few dozen pairs at most');
select cmp_ok((select sum(pairs)::int from narrow), '>', 0, 'fixture: the narrow range holds some tenants');

select cmp_ok(
    (streamseal_test.rows_read('sealed_prefix') - (select sealed from read_before)
     + streamseal_test.rows_read('digest_epochs') - (select epochs from read_before))::int,
    '<=', (select 2 * sum(pairs)::int from narrow),
    'the narrow range''s folds read its own sealed rows, not the lane''s 4000');

select * from finish();
rollback;
