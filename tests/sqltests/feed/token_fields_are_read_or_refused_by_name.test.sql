-- Invariant 15: feed_token reads a version-1 token's fields exactly (members, generations,
-- boundaries, local part), and a token whose checksum is valid but whose body ends inside a field
-- or carries a member name that is not a service name is refused naming that field: never
-- decoded into something else. (Guards the inline field reads of feed_token.)
begin;
select plan(7);
select streamseal.set_service_name('feed-token-fields');
select streamseal.append(array[streamseal_test.own('s1', 1, 'thing.happened'), streamseal_test.own('s1', 2, 'thing.happened')]);
select streamseal.stamp();

create temp table good as select next_token as t from streamseal.read_feed(null, null, null) where next_token is not null;
create temp table body as
select substr(r, 1, length(r) - 8) as b
from (select decode(rpad(translate(t, '-_', '+/'), ((length(t) + 3) / 4) * 4, '='), 'base64') as r from good) x;
create function pg_temp.signed(b bytea) returns text language sql as
$$ select rtrim(translate(encode(b || substr(sha256(b), 1, 8), 'base64'), E'+/\n', '-_'), '=') $$;

select results_eq(
    $$ select t.members, t.generations, t.boundaries, t.own_position, t.copies_xid > 0, t.copies_local_id, t.live_start_xid,
              cardinality(t.replay_origins), octet_length(t.store_id)
       from streamseal.feed_token((select t from good)) t $$,
    $$ values (array['feed-token-fields'], array[0::bigint], array[3::bigint], 2::bigint, true, 0::bigint, 0::bigint, 0, 8) $$,
    'a token''s fields read back as written: one member at generation 0, boundary 3, own position 2');
-- Layout: 20 bytes of header, then the member (length byte, 17-byte name, generation, boundary).
select throws_like($$ select streamseal.feed_token(pg_temp.signed(substr((select b from body), 1, 20 + 1 + 17 + 12))) $$,
    'resume token is malformed: it ends inside its boundary (byte %', 'a body ending inside a boundary names it');
select throws_like($$ select streamseal.feed_token(pg_temp.signed(substr((select b from body), 1, 20 + 1 + 17 + 4))) $$,
    'resume token is malformed: it ends inside its generation (byte %', 'a body ending inside a generation names it');
select throws_like($$ select streamseal.feed_token(pg_temp.signed(substr((select b from body), 1, 20 + 1 + 17 + 16 + 20))) $$,
    'resume token is malformed: it ends inside its copies position (byte %', 'a body ending inside the local part names the field');
select throws_ok($$ select streamseal.feed_token(pg_temp.signed(set_byte((select b from body), 21, 233))) $$,
    'SS400', 'resume token is malformed: its member name at byte 21 is not a service name', 'a name byte outside ASCII is refused');
select throws_ok($$ select streamseal.feed_token(pg_temp.signed(set_byte((select b from body), 21, 70))) $$,
    'SS400', 'resume token is malformed: its member name at byte 21 is not a service name', 'an upper-case name is refused');
select throws_ok($$ select streamseal.feed_token(pg_temp.signed(set_byte((select b from body), 20, 60))) $$,
    'SS400', null, 'a name length past the end is refused');

select * from finish();
rollback;
