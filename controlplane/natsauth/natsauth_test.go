package natsauth_test

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/natsauth"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/demo"
	"github.com/streamseal/streamseal/internal/natstest"
	"github.com/streamseal/streamseal/internal/testrun"
)

// demoTopology is internal/demo's bus, as the demo declares it.
func demoTopology() natsauth.Topology { return demo.Topology() }

// Invariant 12 (authenticity) and 11 (isolation) at the broker: the generated permissions let
// each of the demo's services do its work over the layout functions (publish its own events and
// its control messages, create, pull from and ack its own single-filter durables, subscribe to
// its directed control subjects and its reply prefix) and refuse everything else: another
// origin's events, a control subject naming another sender, another service's consumer, a
// widened filter, stream update/delete/purge, direct gets, another's control subjects or reply
// prefix, and `>`.
func TestGeneratedPermissionsAllowTheWorkAndNothingElse_Invariant12(t *testing.T) {
	t.Parallel()
	topo := demoTopology()
	srv := natstest.StartSecured(t, topo, natstest.SecuredOptions{})
	others := map[string]string{"orders": "billing", "billing": "shipping", "shipping": "orders"}

	for _, svc := range topo.Services {
		t.Run(svc.Name, func(t *testing.T) {
			self, other := svc.Name, others[svc.Name]
			otherSvc, _ := topo.Service(other)
			c := srv.ConnectAs(t, self)
			ctx, cancel := context.WithTimeout(context.Background(), testrun.Failsafe)
			defer cancel()

			// Allowed: start-up (stream info), its own events and control messages.
			if err := wire.EnsureStreams(ctx, c.JS, 0); err != nil {
				t.Fatalf("EnsureStreams as %s: %v", self, err)
			}
			for _, subject := range []string{
				wire.LiveSubject(self, "acme", "order.placed"),
				wire.BeatSubject(self), // its liveness beat
				wire.ControlSubjectFrom(other, self),
				wire.ControlSubjectFrom(wire.BroadcastInbox, self),
				wire.ReplySubject(other, self, "audit-1"), // answering a request that named a reply token
			} {
				if _, err := c.JS.Publish(ctx, subject, []byte("{}")); err != nil {
					t.Errorf("%s publishing %s (allowed): %v", self, subject, err)
				}
			}
			// Allowed: its own durables, each pinned to its filter: create, pull, ack, info, delete.
			var filters []string
			for _, f := range svc.InboxFilters() {
				filters = append(filters, f)
			}
			if len(filters) > 0 {
				if _, err := srv.JS.Publish(ctx, wire.LiveSubject("orders", "acme", "order.placed"), []byte("{}")); err != nil {
					t.Fatal(err)
				}
			}
			pull := func(stream, durable, filter string) {
				t.Helper()
				cons, err := c.JS.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{Durable: durable, FilterSubject: filter,
					AckPolicy: jetstream.AckExplicitPolicy})
				if err != nil {
					t.Fatalf("%s creating its durable %s on %s (allowed): %v", self, durable, filter, err)
				}
				batch, err := cons.Fetch(1, jetstream.FetchMaxWait(testrun.Failsafe))
				if err != nil {
					t.Fatalf("%s pulling from %s (allowed): %v", self, durable, err)
				}
				for m := range batch.Messages() {
					if err := m.DoubleAck(ctx); err != nil {
						t.Errorf("%s acking %s (allowed): %v", self, m.Subject(), err)
					}
				}
				if batch.Error() != nil {
					t.Errorf("%s pulling from %s (allowed): %v", self, durable, batch.Error())
				}
				if _, err := c.JS.Consumer(ctx, stream, durable); err != nil {
					t.Errorf("%s reading its consumer %s (allowed): %v", self, durable, err)
				}
			}
			for _, f := range filters {
				if f == wire.LiveFilter("*", "*", "order.placed") {
					pull(wire.EventsStream, wire.InboxDurable(self, f), f)
				}
				// Its beat durables (liveness, one per origin consumed or one for any origin).
				if origin, ok := strings.CutSuffix(strings.TrimPrefix(f, "streamseal.evt."), "._beat"); ok {
					if origin == "*" {
						origin = "orders"
					}
					if _, err := srv.JS.Publish(ctx, wire.BeatSubject(origin), []byte("{}")); err != nil {
						t.Fatal(err)
					}
					pull(wire.EventsStream, wire.InboxDurable(self, f), f)
				}
			}
			// A control message to self from other, then self pulls it from its directed durable.
			if _, err := srv.JS.Publish(ctx, wire.ControlSubjectFrom(self, other), []byte("{}")); err != nil {
				t.Fatal(err)
			}
			directed := wire.ControlFilters(self)[0]
			pull(wire.ControlStream, wire.ControlDurable(self, directed), directed)
			if err := c.JS.DeleteConsumer(ctx, wire.ControlStream, wire.ControlDurable(self, directed)); err != nil {
				t.Errorf("%s deleting its own durable (allowed): %v", self, err)
			}
			// Allowed: a core subscription to its directed control subjects receives what another sends.
			got := make(chan string, 1)
			sub, err := c.NC.Subscribe(wire.ControlSubjectFrom(self, "*"), func(m *nats.Msg) { got <- m.Subject })
			if err != nil {
				t.Fatal(err)
			}
			if err := c.NC.Flush(); err != nil {
				t.Fatal(err)
			}
			if _, err := srv.JS.Publish(ctx, wire.ControlSubjectFrom(self, other), []byte("{}")); err != nil {
				t.Fatal(err)
			}
			if subject := testrun.Receive(t, "a directed control message on a core subscription", got); subject != wire.ControlSubjectFrom(self, other) {
				t.Errorf("core subscription received %s", subject)
			}
			sub.Unsubscribe()
			// Allowed: an operator's command, connected as self, reads answers on its own reply address.
			sub, err = c.NC.Subscribe(wire.ReplyFilter(self, "audit-1"), func(m *nats.Msg) { got <- m.Subject })
			if err != nil {
				t.Fatal(err)
			}
			if err := c.NC.Flush(); err != nil {
				t.Fatal(err)
			}
			if _, err := srv.JS.Publish(ctx, wire.ReplySubject(self, other, "audit-1"), []byte("{}")); err != nil {
				t.Fatal(err)
			}
			if subject := testrun.Receive(t, "an answer on self's reply address", got); subject != wire.ReplySubject(self, other, "audit-1") {
				t.Errorf("reply subscription received %s", subject)
			}
			sub.Unsubscribe()
			if err := c.NC.Flush(); err != nil { // the server answers in order: any refusal of the above came before this PONG
				t.Fatal(err)
			}
			if errs := c.Errors(); len(errs) > 0 {
				t.Fatalf("%s's allowed work was refused: %v", self, errs)
			}

			// Allowed to create a missing stream, a service cannot re-create an existing one differently.
			if _, err := c.JS.CreateStream(ctx, jetstream.StreamConfig{Name: wire.EventsStream, Subjects: []string{"_INBOX_" + other + ".>"}}); err == nil {
				t.Errorf("%s re-created the events stream with other subjects", self)
			}
			if info, err := srv.JS.Stream(ctx, wire.EventsStream); err != nil || info.CachedInfo().Config.Subjects[0] != "streamseal.evt.>" {
				t.Fatalf("the events stream after %s's create attempt: %v", self, err)
			}

			// Forbidden publishes, each refused by the server.
			otherFilter := wire.LiveFilter("*", "*", "order.placed")
			if fs := otherSvc.InboxFilters(); len(fs) > 0 {
				otherFilter = fs[0]
			}
			ownFilter := wire.LiveFilter("*", "*", "order.placed")
			for _, subject := range []string{
				wire.LiveSubject(other, "acme", "order.placed"),     // another origin's events
				wire.BeatSubject(other),                             // another origin's beat
				wire.ControlSubjectFrom(other, other),               // a control subject naming another sender
				wire.ControlSubjectFrom(wire.BroadcastInbox, other), // a broadcast as another
				wire.ReplySubject(self, other, "audit-1"),           // an answer on a reply address as another
				"$JS.API.CONSUMER.CREATE." + wire.EventsStream + "." + wire.InboxDurable(other, otherFilter) + "." + otherFilter, // another's consumer
				"$JS.API.CONSUMER.CREATE." + wire.EventsStream + "." + wire.InboxDurable(self, ownFilter) + ".streamseal.evt.>",  // own durable, widened filter
				"$JS.API.CONSUMER.CREATE." + wire.EventsStream + ".sneaky",                                                       // an unfiltered consumer
				"$JS.API.CONSUMER.MSG.NEXT." + wire.EventsStream + "." + wire.InboxDurable(other, otherFilter),                   // another's pulls
				"$JS.API.CONSUMER.MSG.NEXT." + wire.ControlStream + "." + wire.ControlDurable(other, wire.ControlFilters(other)[0]),
				"$JS.API.CONSUMER.DELETE." + wire.ControlStream + "." + wire.ControlDurable(other, wire.ControlFilters(other)[0]),
				"$JS.API.CONSUMER.DELETE." + wire.ControlStream + "." + wire.LegacyControlDurable(other), // another's durable of the old layout
				"$JS.ACK." + wire.ControlStream + "." + wire.ControlDurable(other, wire.ControlFilters(other)[0]) + ".1.1.1.1.0",
				"$JS.API.STREAM.UPDATE." + wire.EventsStream,
				"$JS.API.STREAM.DELETE." + wire.ControlStream,
				"$JS.API.STREAM.PURGE." + wire.EventsStream,
				"$JS.API.STREAM.MSG.GET." + wire.ControlStream,
				"$JS.API.STREAM.MSG.DELETE." + wire.EventsStream,
				"$JS.API.DIRECT.GET." + wire.ControlStream,
				"$JS.API.STREAM.CREATE.SNEAKY",
				wire.InboxPrefix(other) + ".x",
			} {
				if err := c.NC.Publish(subject, []byte("{}")); err != nil {
					t.Fatal(err)
				}
				c.AwaitViolation(t, subject)
			}
			// Forbidden subscriptions.
			for _, subject := range []string{
				wire.ControlSubjectFrom(other, "*"),
				wire.ControlSubjectFrom(wire.BroadcastInbox, "*"),
				wire.ReplyFilter(other, "audit-1"), // another's reply address
				wire.ReplyFilter(other, "*"),
				wire.InboxPrefix(other) + ".>",
				wire.LiveFilter("*", "*", "order.placed"),
				">",
			} {
				if _, err := c.NC.SubscribeSync(subject); err != nil {
					t.Fatal(err)
				}
				c.AwaitViolation(t, subject)
			}
			// Nothing forbidden reached the streams.
			if n := srv.Count(t, wire.EventsStream, wire.LiveSubject(other, "forged", "order.placed")); n != 0 {
				t.Errorf("the events stream holds %d events %s published as %s", n, self, other)
			}
			if n := srv.Count(t, wire.ControlStream, wire.ControlSubjectFrom(other, other)); n != 0 {
				t.Errorf("the control stream holds %d messages %s sent as %s", n, self, other)
			}
		})
	}
}

// Invariant 11 (isolation) at the broker: a service consuming tenant acme only may create its
// acme durable and is refused a consumer on globex's events, under its own durable names or any
// other, so its live inbox can never hold a globex event whatever its code does.
func TestGeneratedPermissionsPinTheGrantedTenants_Invariant11(t *testing.T) {
	t.Parallel()
	topo := natsauth.Topology{Services: []natsauth.Service{
		{Name: "orders"},
		{Name: "billing", Consumes: []natsauth.Consumption{{Origin: "orders", Types: []string{"order.paid"}, Tenants: []string{"acme"}}}},
	}}
	srv := natstest.StartSecured(t, topo, natstest.SecuredOptions{})
	c := srv.ConnectAs(t, "billing")
	ctx, cancel := context.WithTimeout(context.Background(), testrun.Failsafe)
	defer cancel()

	acme := wire.LiveTenantFilter("orders", "acme", "order.paid")
	if _, err := c.JS.CreateOrUpdateConsumer(ctx, wire.EventsStream, jetstream.ConsumerConfig{
		Durable: wire.InboxDurable("billing", acme), FilterSubject: acme, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatalf("billing creating its acme consumer (allowed): %v", err)
	}
	globex := wire.LiveTenantFilter("orders", "globex", "order.paid")
	every := wire.LiveFilter("orders", "*", "order.paid")
	for _, subject := range []string{
		"$JS.API.CONSUMER.CREATE." + wire.EventsStream + "." + wire.InboxDurable("billing", globex) + "." + globex,
		"$JS.API.CONSUMER.CREATE." + wire.EventsStream + "." + wire.InboxDurable("billing", acme) + "." + globex,
		"$JS.API.CONSUMER.CREATE." + wire.EventsStream + "." + wire.InboxDurable("billing", every) + "." + every,
	} {
		if err := c.NC.Publish(subject, []byte("{}")); err != nil {
			t.Fatal(err)
		}
		c.AwaitViolation(t, subject)
	}
	stream, err := srv.JS.Stream(ctx, wire.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	lister := stream.ConsumerNames(ctx)
	for name := range lister.Name() {
		names = append(names, name)
	}
	if err := lister.Err(); err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 || names[0] != wire.InboxDurable("billing", acme) {
		t.Fatalf("consumers on the events stream: %v; want billing's acme durable only", names)
	}
}

// Invariant 12 (authenticity) at no extra cost: a service's control endpoint starts under the
// generated permissions with nothing refused. Its start removes its own durable of the layout
// before the sender joined the subject (wire.LegacyControlDurable); the permissions refused that
// delete, and a refused JetStream request is never answered, so the endpoint's start waited out
// the client's API timeout (5 s): every secured service consumed its control messages 5 s late,
// which `bench repair` measured as security costing half the redelivery throughput (0.43).
func TestControlEndpointStartsWithNothingRefused_Invariant12(t *testing.T) {
	t.Parallel()
	topo := demoTopology()
	srv := natstest.StartSecured(t, topo, natstest.SecuredOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), testrun.Failsafe)
	defer cancel()
	for _, svc := range topo.Services {
		self := svc.Name
		c := srv.ConnectAs(t, self)
		control := natstest.Control(t, c.JS, self)
		got := make(chan string, 1)
		control.Handle(wire.KindRedeliverySummary, func(_ context.Context, env wire.Envelope, _ []byte) error {
			got <- env.ID
			return nil
		})
		testrun.Go(t, self+"'s control endpoint", control.Run)
		env, err := wire.NewEnvelope(wire.KindRedeliverySummary, "operator", self, wire.RedeliverySummary{})
		if err != nil {
			t.Fatal(err)
		}
		if err := wire.Publish(ctx, srv.JS, env, nil); err != nil {
			t.Fatal(err)
		}
		if id := testrun.Receive(t, self+"'s control endpoint handling a message", got); id != env.ID {
			t.Fatalf("%s handled %s, want %s", self, id, env.ID)
		}
		if err := c.NC.Flush(); err != nil { // the server answers in order: any refusal came before this PONG
			t.Fatal(err)
		}
		if errs := c.Errors(); len(errs) > 0 {
			t.Fatalf("%s's control endpoint start was refused: %v", self, errs)
		}
	}
}
