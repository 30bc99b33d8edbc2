-- Invariant 9 (storm bounds): a page holds at most least(max_events, cap). The origin's cap
-- clamps whatever a requester asks for, and a smaller request is honoured as asked.
begin;
select plan(5);
select streamseal.set_service_name('redeliver-cap');

select streamseal.append(array(
    select streamseal_test.own('stream-' || (i % 3), i, 'cap.tested', event_id => streamseal_test.uid(i))
    from generate_series(1, 20) as i order by i));
select streamseal.stamp();

select is((select count(*)::int from streamseal.select_redelivery(array['t1'], array['cap.tested'], max_events => 50, cap => 7)),
    7, 'max_events 50 with cap 7 returns 7 rows');
select results_eq(
    $$ select event_id from streamseal.select_redelivery(array['t1'], array['cap.tested'], max_events => 50, cap => 7) $$,
    $$ select event_id from streamseal.select_redelivery(array['t1'], array['cap.tested'], max_events => 1000) limit 7 $$,
    'the clamped page is the first 7 of the full selection, in order');
select is((select count(*)::int from streamseal.select_redelivery(array['t1'], array['cap.tested'], max_events => 5, cap => 7)),
    5, 'max_events 5 under cap 7 returns 5 rows');
select is((select count(*)::int from streamseal.select_redelivery(array['t1'], array['cap.tested'], max_events => 15)),
    15, 'max_events 15 under the default cap returns 15 rows');
select is((select count(*)::int from streamseal.select_redelivery(array['t1'], array['cap.tested'], max_events => 50, cap => 30)),
    20, 'a limit above what matches returns everything that matches');

select * from finish();
rollback;
