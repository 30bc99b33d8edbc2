package migrate_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/streamseal/streamseal/controlplane/migrate"
	"github.com/streamseal/streamseal/internal/dbtest"
)

// TestMigrate_UpgradeMovesOwnNumbersInPlace protects invariants 3 and 7 across the upgrade to
// migration 032 (issue 16): a database migrated by the previous release, whose stamper wrote own
// events' numbers into streamseal.events, upgrades in place. Every stamped own event keeps its
// origin_seq and type_seq (read through streamseal.numbered_events), events no longer carries
// them, copies keep theirs, an own event still unstamped is numbered next, above everything, and
// no number is reused. STREAMSEAL_UPGRADE_EVENTS sets how many own events the old database holds
// (default 2000; the README's timing used 1000000); the migrate's duration is logged.
func TestMigrate_UpgradeMovesOwnNumbersInPlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	size := upgradeSize(t)
	conn := connect(t, dbtest.New(t))

	// The previous release's shape: schema version 31, no own_numbers nor queue, the partial
	// index as the stamper's queue, and own events numbered in events (its stamper's UPDATE).
	mustExec(t, conn, "select streamseal.set_service_name('upgrader')")
	mustExec(t, conn, `drop table streamseal.own_numbers, streamseal.unstamped cascade`)
	// What the migrations after 032 created goes too, so the upgrade re-applies them as a
	// database of version 31 would (each later migration adds its objects here).
	mustExec(t, conn, `drop table streamseal.handlers, streamseal.projection_cursors, streamseal.handler_failures,
		streamseal.handler_parked, streamseal.coverage_findings, streamseal.projection_held,
		streamseal.projection_rebuild_requests cascade`)
	mustExec(t, conn, `drop type streamseal.handler_event cascade`)
	mustExec(t, conn, `drop table streamseal.lane_round_pairs, streamseal.lane_rounds cascade`) // 035
	mustExec(t, conn, `alter table streamseal.known_origins drop column lanes_announced_through`)
	mustExec(t, conn, `drop table streamseal.checkpoint_inbox_load`) // 038
	mustExec(t, conn, `alter table streamseal.checkpoint_inbox drop column origin cascade, drop column first_type_seq,
		drop column last_type_seq, drop column coalescible`)
	mustExec(t, conn, `alter table streamseal.checkpoint_inbox drop column tenant, drop column event_type`) // 040
	mustExec(t, conn, `alter table streamseal.served_requests drop column summary`)                         // 041
	mustExec(t, conn, `drop index streamseal.sent_requests_open_follow_ups`)                                // 041
	mustExec(t, conn, `alter table streamseal.redelivery_queue drop column state_only`)                     // 044
	mustExec(t, conn, `create index redelivery_queue_by_accepted_at on streamseal.redelivery_queue (accepted_at)`)
	// 045: the stream_id columns back to the database's default collation (its down section;
	// the views over events depend on the column and are re-created by the install).
	mustExec(t, conn, `drop view if exists streamseal.numbered_events, streamseal.own_events, streamseal.event_numbers cascade`)
	for _, table := range []string{"events", "stream_digests", "repair_ledger", "stream_closes", "copy_closes", "history_changes"} {
		mustExec(t, conn, `alter table streamseal.`+table+` alter column stream_id type text collate "default"`)
	}
	mustExec(t, conn, `create index events_unstamped on streamseal.events (local_id) where origin_seq is null`)
	// 046: broadcast answers without their answer time (its down section).
	mustExec(t, conn, `alter table streamseal.broadcast_answers drop constraint broadcast_answers_answer_time_only_when_answered,
		drop column answered_broadcast_at`)
	mustExec(t, conn, "update "+migrate.VersionTable+" set version = 31")
	mustExec(t, conn, `alter table streamseal.events disable trigger user`)
	mustExec(t, conn, `
		insert into streamseal.events (event_id, origin, origin_seq, type_seq, tenant, stream_id, stream_version, event_type, payload)
		select md5('own' || g)::uuid, 'upgrader', g, (g + 1) / 2, 't1', 's' || (g % 97), g, 'ty' || (g % 2), '\x7b7d'
		from generate_series(1, `+strconv.Itoa(size)+`) g`)
	mustExec(t, conn, `
		insert into streamseal.events (event_id, origin, origin_seq, type_seq, tenant, stream_id, stream_version, event_type, payload)
		values (md5('copy')::uuid, 'other', 7, 7, 't1', 'c', 1, 'ty0', '\x7b7d'),
		       (md5('unstamped')::uuid, 'upgrader', null, null, 't1', 'late', 1, 'ty0', '\x7b7d')`)
	mustExec(t, conn, `alter table streamseal.events enable trigger user`)
	mustExec(t, conn, `update streamseal.stamp_state set last_origin_seq = `+strconv.Itoa(size+3))
	mustExec(t, conn, `
		insert into streamseal.type_seq_counters (tenant, event_type, last_type_seq)
		values ('t1', 'ty0', `+strconv.Itoa(size)+`), ('t1', 'ty1', `+strconv.Itoa(size)+`)`)
	mustExec(t, conn, "create table upgrade_before as select event_id, origin_seq, type_seq from streamseal.events where origin_seq is not null")

	start := time.Now()
	if _, err := migrate.Migrate(ctx, conn); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	t.Logf("upgrade of %d stamped own events: %v", size, time.Since(start))

	var differing, inEvents, numbered int64
	if err := conn.QueryRow(ctx, `
		select (select count(*) from upgrade_before b
		        full join streamseal.numbered_events e on e.event_id = b.event_id
		        where (b.origin_seq, b.type_seq) is distinct from (e.origin_seq, e.type_seq)),
		       (select count(*) from streamseal.events where origin = 'upgrader' and origin_seq is not null),
		       (select count(*) from streamseal.own_numbers)`).Scan(&differing, &inEvents, &numbered); err != nil {
		t.Fatal(err)
	}
	if differing != 0 {
		t.Fatalf("%d events read through numbered_events differ from their numbers before the upgrade; want 0", differing)
	}
	if inEvents != 0 || numbered != int64(size) {
		t.Fatalf("after the upgrade %d own events carry numbers in events and own_numbers holds %d rows; want 0 and %d", inEvents, numbered, size)
	}

	// 045 on a database holding events: every stream_id column compares in byte order.
	var notC []string
	if err := conn.QueryRow(ctx, `
		select coalesce(array_agg(c.relname::text order by c.relname), '{}')
		from pg_attribute a join pg_class c on c.oid = a.attrelid join pg_namespace n on n.oid = c.relnamespace
		where n.nspname = 'streamseal' and c.relkind = 'r' and a.attname = 'stream_id' and not a.attisdropped
		  and a.attcollation <> 'pg_catalog."C"'::regcollation`).Scan(&notC); err != nil {
		t.Fatal(err)
	}
	if len(notC) != 0 {
		t.Fatalf("after the upgrade the stream_id columns of %v are not collate \"C\"", notC)
	}

	// 046: a broadcast's answer is timed again after the upgrade (check_redelivery_answer's grace
	// reads it), and only an answered one may carry a time.
	var timed bool
	if err := conn.QueryRow(ctx, `
		select exists (select from pg_constraint where conname = 'broadcast_answers_answer_time_only_when_answered')
		   and exists (select from pg_attribute where attrelid = 'streamseal.broadcast_answers'::regclass
		               and attname = 'answered_broadcast_at' and not attisdropped)`).Scan(&timed); err != nil {
		t.Fatal(err)
	}
	if !timed {
		t.Fatal("after the upgrade broadcast_answers has no answered_broadcast_at (migration 046) or lacks its constraint")
	}

	var stamped, last int64
	if err := conn.QueryRow(ctx, "select stamped, last_origin_seq from streamseal.stamp()").Scan(&stamped, &last); err != nil {
		t.Fatal(err)
	}
	var seq, typeSeq int64
	if err := conn.QueryRow(ctx, `select origin_seq, type_seq from streamseal.numbered_events where event_id = md5('unstamped')::uuid`).Scan(&seq, &typeSeq); err != nil {
		t.Fatalf("the event left unstamped by the old release: %v", err)
	}
	if stamped != 1 || seq != int64(size+4) || typeSeq != int64(size+1) {
		t.Fatalf("the first stamp after the upgrade numbered %d events, the late one (%d, %d); want 1 and (%d, %d): above every number handed out before",
			stamped, seq, typeSeq, size+4, size+1)
	}
}

// TestMigrate_UpgradeKeysOwnNumbersByLocalID protects invariant 7 across the upgrade to migration
// 047 (issue 16): a database migrated by the previous release (schema 46, own_numbers keyed by
// event_id) upgrades in place. Every number stays exactly as it was, each takes its event's
// local_id, the unique key moves from event_id to local_id (a second number for an event is
// still refused), and the stamper carries on above everything. STREAMSEAL_UPGRADE_EVENTS sets
// how many stamped own events the old database holds (default 2000); the duration is logged.
func TestMigrate_UpgradeKeysOwnNumbersByLocalID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	size := upgradeSize(t)
	conn := connect(t, dbtest.New(t))
	mustExec(t, conn, "select streamseal.set_service_name('rekeyer')")
	// Own events as the release before stamped them: rows in events, numbers in own_numbers
	// (loaded directly, triggers off, as a stamper would have left them), one still unstamped.
	mustExec(t, conn, `alter table streamseal.events disable trigger user`)
	mustExec(t, conn, `
		insert into streamseal.events (event_id, origin, tenant, stream_id, stream_version, event_type, payload)
		select md5('own' || g)::uuid, 'rekeyer', 't1', 's' || (g % 97), g, 'ty' || (g % 2), '\x7b7d'
		from generate_series(1, `+strconv.Itoa(size)+`) g`)
	mustExec(t, conn, `
		insert into streamseal.own_numbers (origin, origin_seq, type_seq, event_id, tenant, event_type, stream_id, flags, local_id)
		select 'rekeyer', e.stream_version, (e.stream_version + 1) / 2, e.event_id, e.tenant, e.event_type, e.stream_id, 0, e.local_id
		from streamseal.events e`)
	mustExec(t, conn, `alter table streamseal.events enable trigger user`)
	mustExec(t, conn, `update streamseal.stamp_state set last_origin_seq = `+strconv.Itoa(size))
	mustExec(t, conn, `
		insert into streamseal.type_seq_counters (tenant, event_type, last_type_seq)
		values ('t1', 'ty0', `+strconv.Itoa(size/2)+`), ('t1', 'ty1', `+strconv.Itoa((size+1)/2)+`)`)
	mustExec(t, conn, `select streamseal.append('t1', 'late', 1, 'ty0', '\x7b7d'::bytea)`)
	// 047's down section: schema 46's own_numbers (the views over it are re-created by the install).
	mustExec(t, conn, `drop view if exists streamseal.numbered_events, streamseal.own_events, streamseal.event_numbers cascade`)
	mustExec(t, conn, `alter table streamseal.own_numbers add constraint own_numbers_event_id unique (event_id),
		drop constraint own_numbers_local_id, drop column local_id`)
	mustExec(t, conn, "update "+migrate.VersionTable+" set version = 46")
	mustExec(t, conn, "create table rekey_before as select event_id, origin_seq, type_seq from streamseal.own_numbers")

	start := time.Now()
	if _, err := migrate.Migrate(ctx, conn); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	t.Logf("upgrade (047) of %d stamped own events: %v", size, time.Since(start))

	var differing, unkeyed int64
	if err := conn.QueryRow(ctx, `
		select (select count(*) from rekey_before b
		        full join streamseal.own_events o on o.event_id = b.event_id
		        where (b.origin_seq, b.type_seq) is distinct from (o.origin_seq, o.type_seq)),
		       (select count(*) from streamseal.own_numbers n
		        where not exists (select from streamseal.events e where e.local_id = n.local_id and e.event_id = n.event_id))`).
		Scan(&differing, &unkeyed); err != nil {
		t.Fatal(err)
	}
	if differing != 0 || unkeyed != 0 {
		t.Fatalf("after the upgrade %d own events read through own_events differ from their numbers before, %d numbers name no stored event by local_id; want 0 and 0", differing, unkeyed)
	}
	_, err := conn.Exec(ctx, `insert into streamseal.own_numbers (origin, origin_seq, type_seq, event_id, tenant, event_type, stream_id, flags, local_id)
		select origin, origin_seq + 1000000000, type_seq + 1000000000, event_id, tenant, event_type, stream_id, flags, local_id
		from streamseal.own_numbers where origin_seq = 1`)
	if err == nil || !strings.Contains(err.Error(), "own_numbers_local_id") {
		t.Fatalf("a second number for a stored event after the upgrade: %v; want the own_numbers_local_id unique key to refuse it", err)
	}
	var stamped, last int64
	if err := conn.QueryRow(ctx, "select stamped, last_origin_seq from streamseal.stamp()").Scan(&stamped, &last); err != nil {
		t.Fatal(err)
	}
	if stamped != 1 || last != int64(size+1) {
		t.Fatalf("the first stamp after the upgrade numbered %d events up to %d; want 1 up to %d", stamped, last, size+1)
	}
}

// upgradeSize is how many own events an upgrade test's old database holds:
// STREAMSEAL_UPGRADE_EVENTS, default 2000.
func upgradeSize(t *testing.T) int {
	t.Helper()
	v := os.Getenv("STREAMSEAL_UPGRADE_EVENTS")
	if v == "" {
		return 2000
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 10 {
		t.Fatalf("STREAMSEAL_UPGRADE_EVENTS=%q: want a number >= 10", v)
	}
	return n
}
