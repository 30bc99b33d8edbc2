-- Invariant 15: a token that is not exactly one a version-1 encoder wrote is refused (SS400) with
-- a message naming what is wrong; never decoded into something else, never a silent fresh start.
begin;
select plan(10);
select streamseal.set_service_name('feed-bad-tokens');
select streamseal.append(array[streamseal_test.own('s1', 1, 'thing.happened')]);
select streamseal.stamp();

create temp table good as select next_token as t from streamseal.read_feed(null, null, null) where next_token is not null;
select lives_ok($$ select * from streamseal.read_feed(null, null, (select t from good)) $$, 'the token as issued is admitted');
select throws_ok($$ select * from streamseal.read_feed(null, null, '') $$, 'SS400',
    'resume token is empty: pass null to start from the beginning', 'an empty token is refused, not read as a fresh start');
select throws_ok($$ select * from streamseal.read_feed(null, null, 'abc+/def') $$, 'SS400',
    'resume token is malformed: expected base64url (A-Z a-z 0-9 - _), at most 65536 characters', 'non-base64url is refused');
select throws_like($$ select * from streamseal.read_feed(null, null, left((select t from good), length((select t from good)) - 6)) $$,
    'resume token is %', 'a truncated token is refused');
select throws_ok(
    $$ select * from streamseal.read_feed(null, null,
         overlay((select t from good) placing (case when substr((select t from good), 12, 1) = 'A' then 'B' else 'A' end) from 12 for 1)) $$,
    'SS400', 'resume token is damaged: its checksum does not match (truncated or altered in transit)', 'a tampered token is refused');
select throws_ok($$ select * from streamseal.read_feed(null, null, 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA') $$, 'SS400',
    'resume token is damaged: its checksum does not match (truncated or altered in transit)', 'zero bytes are refused');
select throws_ok($$ select * from streamseal.read_feed(null, null,
    rtrim(translate(encode(decode(md5(random()::text) || md5(random()::text) || md5(random()::text), 'hex'), 'base64'), E'+/\n', '-_'), '=')) $$, 'SS400', null, 'random bytes are refused');

-- Another version, with a valid checksum (as a newer encoder would write it).
create temp table other as
select rtrim(translate(encode(b || substr(sha256(b), 1, 8), 'base64'), E'+/\n', '-_'), '=') as t
from (select set_byte(substr(r, 1, length(r) - 8), 0, 2) as b
      from (select decode(rpad(translate(t, '-_', '+/'), ((length(t) + 3) / 4) * 4, '='), 'base64') as r from good) x) y;
select throws_ok($$ select * from streamseal.read_feed(null, null, (select t from other)) $$, 'SS400',
    'resume token version 2 is not supported: this store reads version 1 (a newer streamseal wrote it?)', 'another version is refused');

-- Trailing bytes after the last field, with a valid checksum.
create temp table extra as
select rtrim(translate(encode(b || substr(sha256(b), 1, 8), 'base64'), E'+/\n', '-_'), '=') as t
from (select substr(r, 1, length(r) - 8) || '\x00'::bytea as b
      from (select decode(rpad(translate(t, '-_', '+/'), ((length(t) + 3) / 4) * 4, '='), 'base64') as r from good) x) y;
select throws_ok($$ select * from streamseal.read_feed(null, null, (select t from extra)) $$, 'SS400',
    'resume token is malformed: 1 bytes follow its last field', 'trailing bytes are refused');
select throws_ok($$ select streamseal.feed_token(repeat('A', 70000)) $$, 'SS400',
    'resume token is malformed: expected base64url (A-Z a-z 0-9 - _), at most 65536 characters', 'an oversized token is refused');

select * from finish();
rollback;
