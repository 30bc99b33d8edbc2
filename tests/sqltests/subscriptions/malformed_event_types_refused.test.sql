-- Invariant 13 and issue 18: subscribing to an event type no event can have is refused with a
-- message naming it: longer than the limit append enforces (streamseal.limits max_id_bytes), or
-- holding a control character. An empty type was refused already (tenants_are_named_or_explicitly_all).
begin;
select plan(3);
select streamseal.set_service_name('sub-malformed');
select streamseal.set_limits(max_id_bytes => 16);
select throws_ok($$ select streamseal.subscribe_all_tenants(array['order.placed.with.a.long.name']) $$,
    '22023', 'subscribe_all_tenants: event type ''order.placed.with.a.long.name'' is 29 bytes: no event can have it (streamseal.limits max_id_bytes is 16)',
    'a type longer than any appended event''s is refused');
select throws_ok($$ select streamseal.subscribe(array[E'order\nplaced'], null, array['acme']) $$,
    '22023', E'subscribe: event type ''order\\nplaced'' holds a control character: expected a printable name',
    'a type holding a control character is refused');
select lives_ok($$ select streamseal.subscribe_all_tenants(array['order.placed']) $$, 'a well-formed type is taken');
select * from finish();
rollback;
