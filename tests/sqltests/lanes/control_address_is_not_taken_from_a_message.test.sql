-- Invariant 12 (authenticity): an origin's control address is never taken from a message. A
-- forged checkpoint once rewrote known_origins.control_subject to streamseal.ctl.mallory, where
-- the consumer then sent its repair request; observe_origin now records the directed subject
-- computed from the origin's (authenticated) name and this service's, whatever the caller passes.
begin;
select plan(2);
select streamseal.set_service_name('addr-billing');

select streamseal.observe_origin('addr-orders', 'streamseal.ctl.mallory', 60, 0, 10);
select is(
    (select control_subject from streamseal.known_origins where origin = 'addr-orders'),
    'streamseal.ctl.addr-orders.addr-billing',
    'a message-supplied control address is not stored: the address is computed from the names');

select streamseal.observe_origin('addr-orders', 'streamseal.ctl.addr-orders.v2', 60, 0, 20);
select is(
    (select control_subject from streamseal.known_origins where origin = 'addr-orders'),
    'streamseal.ctl.addr-orders.addr-billing',
    'a later sighting cannot move the address either');

select * from finish();
rollback;
