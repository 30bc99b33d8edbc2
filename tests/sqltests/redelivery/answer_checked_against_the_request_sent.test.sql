-- Invariant 12 (authenticity): check_redelivery_answer lets an answer act only when it answers an
-- open request this service sent to that origin, within the request's scope; a summary closes
-- the request, so later answers are replays.
begin;
select plan(10);
select streamseal.set_service_name('answer-billing');

insert into streamseal.sent_requests (request_id, origin, source, request) values
    ('a0000000-0000-0000-0000-000000000001', 'answer-orders', 'checkpoint',
     '{"request_id":"a0000000-0000-0000-0000-000000000001","tenants":["acme"],"types":["order.placed"],"type_seq_ranges":[[3,6]],"max_events":10}'),
    ('a0000000-0000-0000-0000-000000000002', 'answer-orders', 'operator',
     '{"request_id":"a0000000-0000-0000-0000-000000000002","tenants":["acme"],"types":["order.placed"],"streams":["s"],"from_seq":10,"to_seq":20,"max_events":10}');

select is(streamseal.check_redelivery_answer('a0000000-0000-0000-0000-000000000001', 'answer-orders', false,
    '{acme}', '{order.placed}', '{s}', '{7}', '{null}', '{4}', '{null}'), null,
    'an event inside the type_seq ranges of the open request passes');
select is(streamseal.check_redelivery_answer('a0000000-0000-0000-0000-000000000009', 'answer-orders', false,
    '{acme}', '{order.placed}', '{s}', '{7}', '{null}', '{4}', '{null}'), 'unsolicited',
    'a request id never sent is unsolicited');
select is(streamseal.check_redelivery_answer('a0000000-0000-0000-0000-000000000001', 'answer-shipping', false,
    '{acme}', '{order.placed}', '{s}', '{7}', '{null}', '{4}', '{null}'), 'unsolicited',
    'another origin answering a request sent to answer-orders is unsolicited');
select is(streamseal.check_redelivery_answer('a0000000-0000-0000-0000-000000000001', 'answer-orders', false,
    '{acme}', '{order.placed}', '{s}', '{7}', '{null}', '{6}', '{null}'), 'out_of_scope',
    'a type_seq outside the requested ranges is out of scope');
select is(streamseal.check_redelivery_answer('a0000000-0000-0000-0000-000000000001', 'answer-orders', false,
    '{globex}', '{order.placed}', '{s}', '{7}', '{null}', '{4}', '{null}'), 'out_of_scope',
    'another tenant is out of scope');
select is(streamseal.check_redelivery_answer('a0000000-0000-0000-0000-000000000002', 'answer-orders', false,
    '{acme,acme}', '{order.placed,order.placed}', '{s,t}', '{12,13}', '{null,null}', '{1,2}', '{null,null}'), 'out_of_scope',
    'one event of a stream the request did not name puts the answer out of scope');
select is(streamseal.check_redelivery_answer('a0000000-0000-0000-0000-000000000002', 'answer-orders', false,
    '{acme}', '{order.placed}', '{s}', '{20}', '{null}', '{1}', '{null}'), 'out_of_scope',
    'an origin_seq at the window''s end is out of scope ([from, to) is half-open)');
select is(streamseal.check_redelivery_answer('a0000000-0000-0000-0000-000000000001', 'answer-orders', true,
    '{acme}', '{order.placed}', '{null}', '{null}', '{null}', '{3}', '{1000}'), 'out_of_scope',
    'a cannot-re-deliver claim beyond the requested range is out of scope, and does not close the request');
select is(streamseal.check_redelivery_answer('a0000000-0000-0000-0000-000000000001', 'answer-orders', true,
    '{acme}', '{order.placed}', '{null}', '{null}', '{null}', '{3}', '{4}'), null,
    'the summary within scope passes and closes the request');
select is(streamseal.check_redelivery_answer('a0000000-0000-0000-0000-000000000001', 'answer-orders', false,
    '{acme}', '{order.placed}', '{s}', '{7}', '{null}', '{4}', '{null}'), 'replayed',
    'an answer after the summary is a replay');

select * from finish();
rollback;
