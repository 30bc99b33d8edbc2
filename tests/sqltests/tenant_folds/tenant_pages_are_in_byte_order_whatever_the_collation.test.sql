-- Invariants 9 and 10 across databases: tenant pages (the drill-down of a tenant fold) are in
-- byte order (collate "C") with their cursor, whatever the database's default collation or the
-- collation the caller's cursor carries; the consumer holds each page to (covered_after,
-- covered_through] in byte order (compare_tenant_digests). The cursors below carry the ICU en-US
-- collation, as an en-US database's default would: there 'a' < 'A-2' < 'b' < 'B', in bytes
-- 'A-2' < 'B' < 'a' < 'b'.
begin;
select plan(3);
select streamseal.set_service_name('tenant-byte-order');

select streamseal.append(array[
    streamseal_test.own('s1', 1, event_type => 'x.happened', tenant => 'b', event_id => streamseal_test.uid(7001)),
    streamseal_test.own('s2', 1, event_type => 'x.happened', tenant => 'a', event_id => streamseal_test.uid(7002)),
    streamseal_test.own('s3', 1, event_type => 'x.happened', tenant => 'A-2', event_id => streamseal_test.uid(7003)),
    streamseal_test.own('s4', 1, event_type => 'x.happened', tenant => 'B', event_id => streamseal_test.uid(7004))]);
select streamseal.stamp();
select streamseal.grant_redelivery_all_tenants('tenant-byte-order-consumer', array['x.happened']);

select is(
    array(select p.tenant || ' ' || coalesce(p.resume_after, 'null')
          from streamseal.answer_tenant_digests_page('tenant-byte-order-consumer', 'tenant-byte-order', 0, 100,
                   array['x.happened'], array[null]::text[], null, 2) p),
    array['A-2 B', 'B B'],
    'the first page holds the first tenants in byte order, upper case first, and its cursor is the last of them');
select is(
    array(select p.tenant || ' ' || coalesce(p.resume_after, 'null')
          from streamseal.answer_tenant_digests_page('tenant-byte-order-consumer', 'tenant-byte-order', 0, 100,
                   array['x.happened'], array[null]::text[], 'B' collate "en-US-x-icu", 2) p),
    array['a null', 'b null'],
    'the page after B holds a and b (after B in bytes, before it in en-US) and ends the walk, whatever the cursor''s collation');
select is(
    array(select p.tenant || ' ' || coalesce(p.resume_after, 'null')
          from streamseal.answer_tenant_digests_page('tenant-byte-order-consumer', 'tenant-byte-order', 0, 100,
                   array['x.happened'], array[null]::text[], 'a' collate "en-US-x-icu", 1) p),
    array['b null'],
    'the page after a holds b alone, the last tenant in bytes (in en-US A-2 and B follow a too)');

select * from finish();
rollback;
