-- Invariant 2: an event repeated in one append batch with identical content is stored, stamped
-- and folded once.
begin;
select plan(4);
select streamseal.set_service_name('append-repeat');

select results_eq(
    $$ select streamseal.append(array[
           streamseal_test.own('r', 1, event_id => streamseal_test.uid(1)),
           streamseal_test.own('r', 2, event_id => streamseal_test.uid(2)),
           streamseal_test.own('r', 1, event_id => streamseal_test.uid(1))]) $$,
    $$ values (streamseal_test.uid(1)), (streamseal_test.uid(2)) $$,
    'append returns each stored id once, in batch order');
select is((select count(*)::int from streamseal.events where origin = 'append-repeat'), 2, 'two rows are stored');
select results_eq($$ select stamped, last_origin_seq from streamseal.stamp() $$, $$ values (2, 2::bigint) $$,
    'the stamper numbers two events');
select results_eq(
    $$ select x0, x1, n from streamseal.stream_digests where origin = 'append-repeat' and stream_id = 'r' $$,
    $$ select bit_xor(hashtextextended(u::text, 0)), bit_xor(hashtextextended(u::text, 1)), count(*)
       from unnest(array[streamseal_test.uid(1), streamseal_test.uid(2)]) u $$,
    'the bucket folds each id once');

select * from finish();
rollback;
