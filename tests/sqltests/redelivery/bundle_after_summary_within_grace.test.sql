-- Invariants 12 and 14: replicas of one consumer share the control durable, so one may handle an
-- answer's summary before another has stored the bundles fetched ahead of it. A bundle (never a
-- summary) of a request answered less than `grace` ago is still checked against the request's
-- scope and, within it, stored; a second summary, a bundle without grace or after it, and a bundle
-- of a lane whose history changes (history_changes, stream closes) were applied since the ask
-- stay 'replayed', so grace never brings back what the origin removed on purpose.
begin;
select plan(25);
select streamseal.set_service_name('grace-billing');
select streamseal.subscribe(array['grace.shipped'], null, array['acme']);

insert into streamseal.sent_requests (request_id, origin, source, request, sent_at) values
    ('d7a00000-0000-0000-0000-000000000001', 'grace-orders', 'checkpoint',
     '{"request_id":"d7a00000-0000-0000-0000-000000000001","tenants":["acme"],"types":["order.placed"],"type_seq_ranges":[[3,6]],"max_events":10}',
     now() - interval '10 minutes'),
    ('d7a00000-0000-0000-0000-000000000002', 'grace-orders', 'checkpoint',
     '{"request_id":"d7a00000-0000-0000-0000-000000000002","tenants":["acme"],"types":["order.placed"],"type_seq_ranges":[[3,6]],"max_events":10}',
     now() - interval '10 minutes'),
    ('d7a00000-0000-0000-0000-000000000003', 'grace-stock', 'checkpoint',
     '{"request_id":"d7a00000-0000-0000-0000-000000000003","tenants":["acme"],"types":["order.placed"],"type_seq_ranges":[[3,6]],"max_events":10}',
     now() - interval '10 minutes');
insert into streamseal.sent_requests (request_id, origin, source, request, backfill, sent_at) values
    ('d7a00000-0000-0000-0000-00000000000b', '_all', 'backfill',
     '{"request_id":"d7a00000-0000-0000-0000-00000000000b","types":["grace.shipped"],"max_events":10,"state_only":true}',
     'd7a00000-0000-0000-0000-00000000000b', now() - interval '10 minutes');

-- A directed request: its summary comes first, as another replica handled it.
select is(streamseal.check_redelivery_answer('d7a00000-0000-0000-0000-000000000001', 'grace-orders', true,
    '{}', '{}', '{}', '{}', '{}', '{}', '{}', grace => interval '16 minutes'), null,
    'the summary closes the directed request');
select is(streamseal.check_redelivery_answer('d7a00000-0000-0000-0000-000000000001', 'grace-orders', false,
    '{acme}', '{order.placed}', '{s}', '{7}', '{null}', '{4}', '{null}', grace => interval '16 minutes'), null,
    'a bundle in scope handled within the grace after its summary is stored');
select is(streamseal.check_redelivery_answer('d7a00000-0000-0000-0000-000000000001', 'grace-orders', false,
    '{acme}', '{order.placed}', '{s}', '{7}', '{null}', '{6}', '{null}', grace => interval '16 minutes'), 'out_of_scope',
    'within the grace a bundle is still checked against the request: a type_seq outside it is out of scope');
select is(streamseal.check_redelivery_answer('d7a00000-0000-0000-0000-000000000001', 'grace-orders', false,
    '{globex}', '{order.placed}', '{s}', '{7}', '{null}', '{4}', '{null}', grace => interval '16 minutes'), 'out_of_scope',
    'within the grace another tenant is out of scope');
select is(streamseal.check_redelivery_answer('d7a00000-0000-0000-0000-000000000001', 'grace-shipping', false,
    '{acme}', '{order.placed}', '{s}', '{7}', '{null}', '{4}', '{null}', grace => interval '16 minutes'), 'unsolicited',
    'within the grace another origin answering the request is unsolicited');
select is(streamseal.check_redelivery_answer('d7a00000-0000-0000-0000-000000000001', 'grace-orders', true,
    '{}', '{}', '{}', '{}', '{}', '{}', '{}', grace => interval '16 minutes'), 'replayed',
    'a second summary is a replay, grace or not');
select is(streamseal.check_redelivery_answer('d7a00000-0000-0000-0000-000000000001', 'grace-orders', false,
    '{acme}', '{order.placed}', '{s}', '{7}', '{null}', '{4}', '{null}'), 'replayed',
    'without a grace a bundle after the summary is a replay');
select is(streamseal.check_redelivery_answer('d7a00000-0000-0000-0000-000000000001', 'grace-orders', false,
    '{acme}', '{order.placed}', '{s}', '{7}', '{null}', '{4}', '{null}', grace => interval '0'), 'replayed',
    'with a zero grace a bundle after the summary is a replay');
update streamseal.sent_requests set answered_at = now() - interval '16 minutes'
where request_id = 'd7a00000-0000-0000-0000-000000000001';
select is(streamseal.check_redelivery_answer('d7a00000-0000-0000-0000-000000000001', 'grace-orders', false,
    '{acme}', '{order.placed}', '{s}', '{7}', '{null}', '{4}', '{null}', grace => interval '16 minutes'), 'replayed',
    'a bundle the grace after the summary is a replay');

-- History changes of the lane: only those applied since the ask stop a late bundle.
select is(streamseal.check_redelivery_answer('d7a00000-0000-0000-0000-000000000002', 'grace-orders', true,
    '{}', '{}', '{}', '{}', '{}', '{}', '{}', grace => interval '16 minutes'), null,
    'the second request''s summary closes it');
insert into streamseal.copy_history_cursors (origin, applied_through, applied_at)
values ('grace-orders', 4, now() - interval '11 minutes');
select is(streamseal.check_redelivery_answer('d7a00000-0000-0000-0000-000000000002', 'grace-orders', false,
    '{acme}', '{order.placed}', '{s}', '{7}', '{null}', '{4}', '{null}', grace => interval '16 minutes'), null,
    'history changes applied before the ask do not stop a late bundle');
update streamseal.copy_history_cursors set applied_through = 5, applied_at = now() - interval '5 minutes'
where origin = 'grace-orders';
select is(streamseal.check_redelivery_answer('d7a00000-0000-0000-0000-000000000002', 'grace-orders', false,
    '{acme}', '{order.placed}', '{s}', '{7}', '{null}', '{4}', '{null}', grace => interval '16 minutes'), 'replayed',
    'a late bundle of a lane whose history changes were applied after the ask is a replay: it could restore a removed event');
select is(streamseal.check_redelivery_answer('d7a00000-0000-0000-0000-000000000003', 'grace-stock', true,
    '{}', '{}', '{}', '{}', '{}', '{}', '{}', grace => interval '16 minutes'), null,
    'the third request''s summary closes it');
insert into streamseal.copy_closes (origin, tenant, stream_id, below_version, applied_at)
values ('grace-stock', 'acme', 'closed', 3, now() - interval '1 minute');
select is(streamseal.check_redelivery_answer('d7a00000-0000-0000-0000-000000000003', 'grace-stock', false,
    '{acme}', '{order.placed}', '{s}', '{7}', '{null}', '{4}', '{null}', grace => interval '16 minutes'), 'replayed',
    'a late bundle of a lane with a stream closed after the ask is a replay: it could restore closed history');

-- A broadcast (a backfill), answered per origin.
select is(streamseal.check_redelivery_answer('d7a00000-0000-0000-0000-00000000000b', 'grace-ledger', true,
    '{}', '{}', '{}', '{}', '{}', '{}', '{}', grace => interval '16 minutes'), null,
    'grace-ledger'' summary closes the broadcast for grace-ledger');
select isnt((select answered_broadcast_at from streamseal.broadcast_answers
             where backfill = 'd7a00000-0000-0000-0000-00000000000b' and origin = 'grace-ledger'), null,
            'the broadcast''s answer is timed');
select is(streamseal.check_redelivery_answer('d7a00000-0000-0000-0000-00000000000b', 'grace-ledger', false,
    '{acme}', '{grace.shipped}', '{s}', '{7}', '{null}', '{4}', '{null}', grace => interval '16 minutes'), null,
    'a broadcast''s bundle in scope within the grace after its origin''s summary is stored');
select is(streamseal.check_redelivery_answer('d7a00000-0000-0000-0000-00000000000b', 'grace-ledger', false,
    '{globex}', '{grace.shipped}', '{s}', '{7}', '{null}', '{4}', '{null}', grace => interval '16 minutes'), 'out_of_scope',
    'within the grace a tenant this service does not consume is out of scope');
select is(streamseal.check_redelivery_answer('d7a00000-0000-0000-0000-00000000000b', 'grace-ledger', true,
    '{}', '{}', '{}', '{}', '{}', '{}', '{}', grace => interval '16 minutes'), 'replayed',
    'the origin''s second summary of the broadcast is a replay');
select is(streamseal.check_redelivery_answer('d7a00000-0000-0000-0000-00000000000b', 'grace-ledger', false,
    '{acme}', '{grace.shipped}', '{s}', '{7}', '{null}', '{4}', '{null}'), 'replayed',
    'without a grace a broadcast''s bundle after its origin''s summary is a replay');
update streamseal.broadcast_answers set answered_broadcast_at = now() - interval '16 minutes'
where backfill = 'd7a00000-0000-0000-0000-00000000000b' and origin = 'grace-ledger';
select is(streamseal.check_redelivery_answer('d7a00000-0000-0000-0000-00000000000b', 'grace-ledger', false,
    '{acme}', '{grace.shipped}', '{s}', '{7}', '{null}', '{4}', '{null}', grace => interval '16 minutes'), 'replayed',
    'a broadcast''s bundle the grace after its origin''s summary is a replay');
select is(streamseal.check_redelivery_answer('d7a00000-0000-0000-0000-00000000000b', 'grace-carrier', true,
    '{}', '{}', '{}', '{}', '{}', '{}', '{}', grace => interval '16 minutes'), null,
    'grace-carrier''s summary closes the broadcast for grace-carrier');
select is(streamseal.check_redelivery_answer('d7a00000-0000-0000-0000-00000000000b', 'grace-carrier', false,
    '{acme}', '{grace.shipped}', '{s}', '{7}', '{null}', '{4}', '{null}', lane => 'grace-third', grace => interval '16 minutes'), null,
    'forwarded copies within the grace after the sender''s summary are stored');
insert into streamseal.copy_history_cursors (origin, applied_through)
values ('grace-third', 1);
select is(streamseal.check_redelivery_answer('d7a00000-0000-0000-0000-00000000000b', 'grace-carrier', false,
    '{acme}', '{grace.shipped}', '{s}', '{7}', '{null}', '{4}', '{null}', lane => 'grace-third', grace => interval '16 minutes'), 'replayed',
    'late forwarded copies of a lane whose history changed after the ask are a replay (the lane''s changes, not the sender''s)');
select is(streamseal.check_redelivery_answer('d7a00000-0000-0000-0000-00000000000b', 'grace-carrier', false,
    '{acme}', '{grace.shipped}', '{s}', '{7}', '{null}', '{4}', '{null}', grace => interval '16 minutes'), null,
    'grace-carrier''s own late bundle still stores: its lane''s history did not change');

select * from finish();
rollback;
