package wire_test

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/streamseal/streamseal/controlplane/natsauth"
	"github.com/streamseal/streamseal/controlplane/wire"
	"github.com/streamseal/streamseal/internal/natstest"
	"github.com/streamseal/streamseal/internal/testrun"
)

// Invariant 12 over TLS: against a TLS-only server that requires client certificates, a service
// connecting through wire.Connect with the CA, its client certificate and key and its user works
// end to end (publishes its event, pulls it back through its own durable, acks it); without the
// client certificate, or trusting another CA, the connection fails.
func TestTLSWithClientCertificateWorksEndToEnd_Invariant12(t *testing.T) {
	t.Parallel()
	filter := wire.LiveFilter("billing", "*", "invoice.sent")
	topo := natsauth.Topology{Services: []natsauth.Service{{Name: "billing", Consumes: []natsauth.Consumption{
		{Origin: "billing", Types: []string{"invoice.sent"}, AllTenants: true}}}}}
	srv := natstest.StartSecured(t, topo, natstest.SecuredOptions{TLS: true})
	sec := srv.Security("billing")
	logger := testrun.Logger(t)

	nc, err := wire.Connect(srv.Embedded.URL(), "billing", sec, logger)
	if err != nil {
		t.Fatalf("connect with CA, client certificate and user: %v", err)
	}
	defer nc.Close()
	if !nc.TLSRequired() {
		t.Fatal("the connection is not TLS")
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testrun.Failsafe)
	defer cancel()
	if err := wire.EnsureStreams(ctx, js, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, wire.LiveSubject("billing", "acme", "invoice.sent"), []byte(`{"n":1}`)); err != nil {
		t.Fatalf("publish over TLS: %v", err)
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, wire.EventsStream, jetstream.ConsumerConfig{Durable: wire.InboxDurable("billing", filter),
		FilterSubject: filter, AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(testrun.Failsafe))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for m := range batch.Messages() {
		n++
		if string(m.Data()) != `{"n":1}` {
			t.Errorf("pulled %q", m.Data())
		}
		if err := m.DoubleAck(ctx); err != nil {
			t.Errorf("ack over TLS: %v", err)
		}
	}
	if n != 1 {
		t.Fatalf("pulled %d messages over TLS (err %v); want the one published", n, batch.Error())
	}

	noCert := sec
	noCert.TLSCertFile, noCert.TLSKeyFile = "", ""
	if nc, err := wire.Connect(srv.Embedded.URL(), "billing", noCert, logger); err == nil {
		nc.Close()
		t.Fatal("connected without a client certificate to a server that requires one")
	} else if !strings.Contains(err.Error(), "tls") {
		t.Errorf("error without a client certificate does not say TLS: %v", err)
	}
	otherCA := sec
	otherCA.TLSCAFile = srv.Certs.OtherCAFile
	if nc, err := wire.Connect(srv.Embedded.URL(), "billing", otherCA, logger); err == nil {
		nc.Close()
		t.Fatal("connected trusting a CA that did not sign the server's certificate")
	} else if !strings.Contains(err.Error(), "x509") {
		t.Errorf("error with the wrong CA does not say x509: %v", err)
	}
}
