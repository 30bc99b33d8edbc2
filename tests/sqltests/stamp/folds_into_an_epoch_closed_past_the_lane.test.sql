-- Invariant 4 (digest truth) for stamp()'s own fold (issue 16: it folds in its numbering
-- statement, not through _fold_changes): new numbers lie above the stamped lane, so normally in
-- no closed epoch; when an epoch was closed past the stamped lane (history loaded with the
-- triggers off), the numbers that fall inside it are folded into that closed epoch and the
-- lane's sealed prefix as _fold_changes would, and those the epoch does not cover are not.
-- Witness: verify_digest_epochs recomputes the closed epoch and finds no drift.
begin;
select plan(4);
select streamseal.set_service_name('stamp-closed-epoch');

select count(*) from streamseal.append(array(
    select streamseal_test.own('s' || (i % 3), i / 3 + 1, 'thing.' || (i % 2), event_id => streamseal_test.uid(i))
    from generate_series(1, 14) i order by i));
-- Epoch 0 of width 10 ([0, 10)) closed while nothing is stamped yet.
insert into streamseal.lane_epochs (origin, width, closed_through) values ('stamp-closed-epoch', 10, 1);

select results_eq($$ select stamped, last_origin_seq from streamseal.stamp() $$, $$ values (14, 14::bigint) $$,
    'fixture: the 14 events numbered 1 to 14');
select is((select sum(n)::int from streamseal.digest_epochs where origin = 'stamp-closed-epoch' and epoch = 0), 9,
    'the nine numbered inside the closed epoch [0, 10) are folded into it');
select is((select sum(d.drifted)::int from streamseal.verify_digest_epochs() d where d.origin = 'stamp-closed-epoch'), 0,
    'and the closed epoch equals a recompute');
select is(streamseal_test.digest_drift(), 0::bigint, 'the stream digests equal a recompute');

select * from finish();
rollback;
