package store_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamseal/streamseal/controlplane/store"
	"github.com/streamseal/streamseal/internal/dbtest"
)

// exampleDatabase returns a pool on a fresh, migrated database whose service is named service,
// and a function that drops it. An application opens its own database the same way:
// store.Open(ctx, databaseURL) after `streamseal migrate`, then ServiceNameSet once.
func exampleDatabase(service string) (*pgxpool.Pool, func()) {
	ctx := context.Background()
	server, err := dbtest.StartServer(ctx)
	if err != nil {
		panic(err)
	}
	url, err := server.NewDatabase(ctx, "streamseal_example")
	if err != nil {
		panic(err)
	}
	pool, err := store.Open(ctx, url)
	if err != nil {
		panic(err)
	}
	if err := store.ServiceNameSet(ctx, pool, service); err != nil {
		panic(err)
	}
	return pool, func() {
		pool.Close()
		_ = server.DropDatabase(ctx, url)
	}
}

// An application appends its own events; they are stored unstamped and count in no digest
// until the stamper numbers them in commit order (the run loop does this; EventsStamp is the same call).
// The maintained digests then equal a recompute from the store.
func ExampleEventsAppend() {
	ctx := context.Background()
	pool, drop := exampleDatabase("orders")
	defer drop()

	ids, err := store.EventsAppend(ctx, pool, []store.NewEvent{
		{Tenant: "acme", StreamID: "order-42", StreamVersion: 1, EventType: "order.placed", Payload: []byte(`{"total": 10}`)},
		{Tenant: "acme", StreamID: "order-42", StreamVersion: 2, EventType: "order.paid", Payload: []byte(`{}`)},
		{Tenant: "acme", StreamID: "order-43", StreamVersion: 1, EventType: "order.placed", Payload: []byte(`{"total": 7}`)},
	})
	if err != nil {
		panic(err)
	}
	before, err := store.StreamDigests(ctx, pool)
	if err != nil {
		panic(err)
	}
	fmt.Println("appended", len(ids), "events; digest buckets before stamping:", len(before))

	stamped, err := store.EventsStamp(ctx, pool, 100)
	if err != nil {
		panic(err)
	}
	fmt.Println("stamped", stamped.Stamped, "through origin_seq", stamped.LastOriginSeq)

	digests, err := store.StreamDigests(ctx, pool)
	if err != nil {
		panic(err)
	}
	for _, d := range digests {
		fmt.Printf("%s/%s/%s/%s: n=%d\n", d.Origin, d.Tenant, d.EventType, d.StreamID, d.N)
	}
	drift, err := store.StreamDigestsVerify(ctx, pool, false)
	if err != nil {
		panic(err)
	}
	fmt.Println("drift found by verification:", len(drift))
	// Output:
	// appended 3 events; digest buckets before stamping: 0
	// stamped 3 through origin_seq 3
	// orders/acme/order.paid/order-42: n=1
	// orders/acme/order.placed/order-42: n=1
	// orders/acme/order.placed/order-43: n=1
	// drift found by verification: 0
}

// A bad event refuses the whole batch with ErrInvalidInput and a message naming the event and
// what is wrong; nothing of the batch is written.
func ExampleEventsAppend_refused() {
	ctx := context.Background()
	pool, drop := exampleDatabase("orders")
	defer drop()

	_, err := store.EventsAppend(ctx, pool, []store.NewEvent{
		{Tenant: "acme", StreamID: "order-42", StreamVersion: 1, EventType: "order.placed", Payload: []byte(`{}`)},
		{Tenant: "acme", StreamID: "order-42", StreamVersion: 2, EventType: "order.paid", Payload: []byte(`{}`), Flags: 8},
	})
	fmt.Println(errors.Is(err, store.ErrInvalidInput))
	fmt.Println(err)

	stamped, err := store.EventsStamp(ctx, pool, 100)
	if err != nil {
		panic(err)
	}
	fmt.Println("events written:", stamped.Stamped)
	// Output:
	// true
	// append: invalid input: append: event (new) (#2 of the batch): flags 8 has unknown bits 8 (known: 1 ephemeral, 2 at-most-once, 4 state-only)
	// events written: 0
}

// Copies of another origin's events keep the identity their origin stamped. Ingesting the same
// events again adds nothing (invariant 2): EventsIngest returns only the ids it actually added.
func ExampleEventsIngest() {
	ctx := context.Background()
	pool, drop := exampleDatabase("billing")
	defer drop()

	copyOf := func(seq int64) store.EventCopy {
		return store.EventCopy{EventID: uuid.NewSHA1(uuid.NameSpaceOID, fmt.Appendf(nil, "orders-%d", seq)), Origin: "orders",
			OriginSeq: seq, TypeSeq: seq, Tenant: "acme", StreamID: "order-42", StreamVersion: seq, EventType: "order.placed",
			Payload: []byte(`{"seq": ` + fmt.Sprint(seq) + `}`), OccurredAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	}
	added, err := store.EventsIngest(ctx, pool, []store.EventCopy{copyOf(1), copyOf(2)})
	if err != nil {
		panic(err)
	}
	fmt.Println("first delivery added", len(added))
	added, err = store.EventsIngest(ctx, pool, []store.EventCopy{copyOf(1), copyOf(2), copyOf(3)})
	if err != nil {
		panic(err)
	}
	fmt.Println("redelivery added", len(added), "- the new one:", added[0] == copyOf(3).EventID)

	digests, err := store.StreamDigests(ctx, pool)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s/%s/%s: n=%d\n", digests[0].Origin, digests[0].EventType, digests[0].StreamID, digests[0].N)
	// Output:
	// first delivery added 2
	// redelivery added 1 - the new one: true
	// orders/order.placed/order-42: n=3
}

// TypeDigests answers a lane's half-open window [from, to) with one fold per (tenant, type) and
// the watermark it actually covered; windows compose by XOR, so [0, 3) and [3, watermark) fold
// to the whole.
func ExampleTypeDigests() {
	ctx := context.Background()
	pool, drop := exampleDatabase("orders")
	defer drop()

	var events []store.NewEvent
	for v := int64(1); v <= 5; v++ {
		eventType := "order.placed"
		if v%2 == 0 {
			eventType = "order.paid"
		}
		events = append(events, store.NewEvent{Tenant: "acme", StreamID: "order-42", StreamVersion: v, EventType: eventType, Payload: []byte(`{}`)})
	}
	if _, err := store.EventsAppend(ctx, pool, events); err != nil {
		panic(err)
	}
	if _, err := store.EventsStamp(ctx, pool, 100); err != nil {
		panic(err)
	}

	whole, err := store.TypeDigests(ctx, pool, "orders", 0, 1_000_000, 0)
	if err != nil {
		panic(err)
	}
	fmt.Println("watermark", whole.Watermark)
	for _, d := range whole.Digests {
		fmt.Printf("%s/%s: n=%d\n", d.Tenant, d.EventType, d.N)
	}

	head, err := store.TypeDigests(ctx, pool, "orders", 0, 3, 0)
	if err != nil {
		panic(err)
	}
	tail, err := store.TypeDigests(ctx, pool, "orders", head.Watermark, whole.Watermark, 0)
	if err != nil {
		panic(err)
	}
	folded := map[string]store.TypeDigest{}
	for _, d := range append(head.Digests, tail.Digests...) {
		f := folded[d.EventType]
		folded[d.EventType] = store.TypeDigest{Tenant: d.Tenant, EventType: d.EventType, X0: f.X0 ^ d.X0, X1: f.X1 ^ d.X1, N: f.N + d.N}
	}
	composes := len(folded) == len(whole.Digests)
	for _, d := range whole.Digests {
		composes = composes && folded[d.EventType] == d
	}
	fmt.Println("[0, 3) and [3, 6) compose to [0, 6):", composes)
	// Output:
	// watermark 6
	// acme/order.paid: n=2
	// acme/order.placed: n=3
	// [0, 3) and [3, 6) compose to [0, 6): true
}
