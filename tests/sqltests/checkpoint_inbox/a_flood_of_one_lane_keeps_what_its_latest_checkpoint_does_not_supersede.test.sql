-- Invariant 13 (and 1): an origin publishing checkpoints faster than the verifier takes them
-- cannot grow checkpoint_inbox past its per-origin cap. Past the cap, checkpoint_inbox_record
-- drops the rows a later row of the same lane (subject) supersedes, and only those: a row a later
-- one announces at least as far as (a heartbeat: any later row), never the lane's oldest range
-- (it may birth the lane), never one carrying at-most-once acceptances, never the newest, never
-- one announcing beyond every later row; another origin's rows are not touched.
begin;
select plan(9);

-- record(origin, subject, first, last, coalescible) records one row with a cap of 10 per origin.
create function pg_temp.record(o text, s text, f bigint, l bigint, c boolean)
returns table (origin text, superseded bigint, waiting bigint, refused integer[])
language sql as $$
    select * from streamseal.checkpoint_inbox_record(array[o], array[s], array['\x7b7d'::bytea],
        array[f], array[l], array[c], false, 10)
$$;
create temp table reported (origin text, superseded bigint, waiting bigint, refused integer[]);

insert into reported select * from pg_temp.record('shipping', 'streamseal.evt.shipping.acme.t1', 1, 1, true);
insert into reported select * from pg_temp.record('orders', 'streamseal.evt.orders.acme.t1', 1, 5, true);   -- births the lane
insert into reported select * from pg_temp.record('orders', 'streamseal.evt.orders.acme.t1', 6, 8, false);  -- at-most-once
insert into reported select * from pg_temp.record('orders', 'streamseal.evt.orders.acme.t1', 9, 1000, true); -- announces far
insert into reported select r.*
from generate_series(1, 40) n, pg_temp.record('orders', 'streamseal.evt.orders.acme.t1', null, nullif(n, n), true) r;  -- n: one call each
insert into reported select r.*
from generate_series(10, 200) n, pg_temp.record('orders', 'streamseal.evt.orders.acme.t1', n, n, true) r;

select cmp_ok((select count(*)::int from streamseal.checkpoint_inbox where origin = 'orders'), '<=', 10,
    'a flood of 234 checkpoints of one lane leaves at most the cap (10) waiting');
select is((select count(*)::int from streamseal.checkpoint_inbox where origin = 'orders' and first_type_seq = 1), 1,
    'the lane''s oldest range (it may birth the lane) is kept');
select is((select count(*)::int from streamseal.checkpoint_inbox where origin = 'orders' and first_type_seq = 6), 1,
    'the row carrying at-most-once acceptances is kept');
select is((select count(*)::int from streamseal.checkpoint_inbox where origin = 'orders' and last_type_seq = 1000), 1,
    'the row announcing beyond every later row is kept');
select is((select last_type_seq from streamseal.checkpoint_inbox where origin = 'orders' order by id desc limit 1), 200::bigint,
    'the newest row is kept');
select is((select count(*)::int from streamseal.checkpoint_inbox where origin = 'orders' and last_type_seq is null), 0,
    'heartbeats a later row follows are gone');
select is((select count(*)::int from streamseal.checkpoint_inbox where origin = 'shipping'), 1,
    'another origin''s row is not touched');
select is((select sum(superseded)::int from reported where origin = 'orders'),
          234 - (select count(*)::int from streamseal.checkpoint_inbox where origin = 'orders'),
    'every dropped row is reported as superseded');
select is((select count(*)::int from reported where cardinality(refused) > 0), 0,
    'nothing is refused while superseded rows make room');

select * from finish();
rollback;
