-- Invariant 8 (bounded cost): the origin's record of reaped numbers (reaped_ephemeral) keeps at
-- most _reaped_ranges_kept() ranges per column, the highest: interleaved types would otherwise
-- add a range per reaped run forever. Older numbers are answered absent (still an accepted loss).
begin;
select plan(4);
select is(streamseal._latest_ranges('{[1,2),[3,4),[5,6)}', 2), '{[3,4),[5,6)}'::int8multirange,
          'the highest n ranges are kept');
select is(streamseal._latest_ranges('{[1,2),[3,4)}', 5), '{[1,2),[3,4)}'::int8multirange,
          'fewer than n ranges are kept whole');
select is(streamseal._latest_ranges('{}', 5), '{}'::int8multirange, 'nothing stays nothing');

select streamseal.set_service_name('bounded-origin');
-- 2400 own events alternating ephemeral 'blink' and ordinary 'solid': 1200 reaped runs.
select streamseal.append(array(
    select streamseal_test.own('s', i, case when i % 2 = 0 then 'blink' else 'solid' end, 't1',
                               flags => case when i % 2 = 0 then 1 else 0 end)
    from generate_series(1, 2400) i order by i));
select streamseal.stamp(10000);
update streamseal.events set stored_at = now() - interval '2 hours';
update streamseal.relay_state set published_through = 2400;
update streamseal.checkpoint_state set published_through = 2401;
select streamseal.reap_ephemeral(interval '1 hour');
select results_eq(
    $$ select (select count(*) from unnest(origin_seqs))::int, lower(origin_seqs), upper(origin_seqs)
       from streamseal.reaped_ephemeral where event_type = 'blink' $$,
    $$ values (streamseal._reaped_ranges_kept(), 2400 - 2 * streamseal._reaped_ranges_kept() + 2::bigint, 2401::bigint) $$,
    'the interleaved origin_seqs keep only the latest ranges');
select * from finish();
rollback;
