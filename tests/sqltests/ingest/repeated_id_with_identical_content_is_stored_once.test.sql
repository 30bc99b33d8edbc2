-- Invariant 2: a copy repeated in one ingest batch with identical content is stored and folded
-- once (a double fold would cancel its hashes out of the bucket).
begin;
select plan(3);
select streamseal.set_service_name('ingest-repeat');

select results_eq(
    $$ select streamseal.ingest(array[
           streamseal_test.copy('repeat-src', 1, 1, 'r', 1, event_id => streamseal_test.uid(1)),
           streamseal_test.copy('repeat-src', 2, 2, 'r', 2, event_id => streamseal_test.uid(2)),
           streamseal_test.copy('repeat-src', 1, 1, 'r', 1, event_id => streamseal_test.uid(1))]) $$,
    $$ values (streamseal_test.uid(1)), (streamseal_test.uid(2)) $$,
    'ingest returns each added id once, in batch order');
select is((select count(*)::int from streamseal.events where origin = 'repeat-src'), 2, 'two rows are stored');
select results_eq(
    $$ select x0, x1, n from streamseal.stream_digests where origin = 'repeat-src' and stream_id = 'r' $$,
    $$ select bit_xor(hashtextextended(u::text, 0)), bit_xor(hashtextextended(u::text, 1)), count(*)
       from unnest(array[streamseal_test.uid(1), streamseal_test.uid(2)]) u $$,
    'the bucket folds each id once');

select * from finish();
rollback;
