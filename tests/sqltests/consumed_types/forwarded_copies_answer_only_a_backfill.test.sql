-- Invariants 11 and 12, issue 18: a bundle of forwarded copies (its events' origin, the lane, is
-- not its sender) answers a backfill's request only (the broadcast or a follow-up of it, each
-- within scope: a named type, a (lane, tenant, type) this service consumes); a directed repair
-- asked its origin for its own lane, so copies from anyone else are out of scope there, and so
-- are copies claiming this service's own events.
begin;
select plan(6);
select streamseal.set_service_name('fc-billing');
select streamseal.subscribe(array['fc.placed'], null, array['acme']);
select streamseal.consumed_types_reconcile(true);
select streamseal.subscribe(array['fc.shipped'], 'fc-orders', array['acme']);
select streamseal.consumed_types_reconcile(false);
insert into streamseal.sent_requests (request_id, origin, source, request, backfill) values
    ('c0000000-0000-0000-0000-000000000001', '_all', 'backfill',
     '{"request_id":"c0000000-0000-0000-0000-000000000001","types":["fc.shipped"],"max_events":10,"state_only":true}',
     'c0000000-0000-0000-0000-000000000001');
insert into streamseal.sent_requests (request_id, origin, source, request) values
    ('c0000000-0000-0000-0000-000000000002', 'fc-third', 'checkpoint',
     '{"request_id":"c0000000-0000-0000-0000-000000000002","tenants":["acme"],"types":["fc.shipped"],"max_events":10}');

select is(streamseal.check_redelivery_answer('c0000000-0000-0000-0000-000000000001', 'fc-third', false,
    '{acme}', '{fc.shipped}', '{s}', '{7}', '{null}', '{4}', '{null}', lane => 'fc-orders'), null,
    'fc-third''s copies of fc-orders'' events answer the broadcast');
select is(streamseal.check_redelivery_answer('c0000000-0000-0000-0000-000000000001', 'fc-third', false,
    '{acme}', '{fc.shipped}', '{s}', '{7}', '{null}', '{4}', '{null}', lane => 'fc-stock'), 'out_of_scope',
    'copies of a lane this service does not consume the type from are out of scope');
select is(streamseal.check_redelivery_answer('c0000000-0000-0000-0000-000000000001', 'fc-third', false,
    '{acme}', '{fc.shipped}', '{s}', '{7}', '{null}', '{4}', '{null}', lane => 'fc-billing'), 'out_of_scope',
    'copies claiming this service''s own events are out of scope');
select is(streamseal.check_redelivery_answer('c0000000-0000-0000-0000-000000000002', 'fc-third', false,
    '{acme}', '{fc.shipped}', '{s}', '{7}', '{null}', '{4}', '{null}', lane => 'fc-orders'), 'out_of_scope',
    'a directed repair is answered from its origin''s own lane only: copies are out of scope');
select is(streamseal.check_redelivery_answer('c0000000-0000-0000-0000-000000000002', 'fc-third', false,
    '{acme}', '{fc.shipped}', '{s}', '{7}', '{null}', '{4}', '{null}', lane => 'fc-third'), null,
    'the lane naming the sender is its own lane, as before');
select is(streamseal.check_redelivery_answer('c0000000-0000-0000-0000-000000000001', 'fc-third', false,
    '{acme}', '{fc.shipped}', '{s}', '{7}', '{null}', '{4}', '{null}', lane => 'Not A Name'), 'out_of_scope',
    'a lane that is not a service name is out of scope');
select * from finish();
rollback;
