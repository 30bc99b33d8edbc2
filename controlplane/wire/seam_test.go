package wire

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func validEnvelope(t testing.TB, to string) []byte {
	t.Helper()
	env, err := NewEnvelope(KindRedeliveryRequest, "billing", to, map[string]any{"tenants": []string{"acme"}})
	if err != nil {
		t.Fatal(err)
	}
	data, err := Encode(env, nil)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Invariant 11 (isolation) and bad-input handling: the seam drops what this service must not
// act on, and counts each drop by reason.
func TestSeam(t *testing.T) {
	t.Parallel()
	withVersion := func(v int) []byte {
		env, _ := NewEnvelope(KindRedeliveryRequest, "billing", "orders", map[string]any{})
		env.V = v
		data, _ := Encode(env, nil)
		return data
	}
	withKind := func(kind string) []byte {
		env, _ := NewEnvelope(KindRedeliveryRequest, "billing", "orders", map[string]any{})
		env.Kind = kind
		data, _ := Encode(env, nil)
		return data
	}
	fromSelf, _ := NewEnvelope(KindRedeliveryRequest, "orders", "", map[string]any{})
	fromSelfData, _ := Encode(fromSelf, nil)

	cases := []struct {
		name   string
		data   []byte
		reason string
	}{
		{"ForeignTargetIsDropped", validEnvelope(t, "shipping"), DropForeignTarget},
		{"MalformedJSONIsDropped", []byte(`{"v":1,"kind":`), DropMalformed},
		{"NonJSONIsDropped", []byte("\x00\xff garbage"), DropMalformed},
		{"UnknownFieldIsDropped", []byte(`{"v":1,"kind":"redelivery_request","id":"x","from":"a","sent_at":"2026-01-01T00:00:00Z","body":{},"extra":1}`), DropMalformed},
		{"MissingSenderIsDropped", []byte(`{"v":1,"kind":"redelivery_request","id":"x","sent_at":"2026-01-01T00:00:00Z","body":{}}`), DropMalformed},
		{"UnknownVersionIsDropped", withVersion(2), DropUnknownVersion},
		{"UnknownKindIsDropped", withKind("launch_missiles"), DropUnknownKind},
		{"OversizedIsDropped", append(validEnvelope(t, "orders"), append([]byte("\n"), bytes.Repeat([]byte("x"), 2048)...)...), DropOversized},
		{"OwnBroadcastIsIgnored", fromSelfData, DropOwnMessage},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			seam := &Seam{Self: "orders", MaxBytes: 1024}
			subject := "streamseal.ctl.orders.billing"
			if tc.reason == DropOwnMessage {
				subject = "streamseal.ctl._all.orders"
			}
			if _, _, ok := seam.Accept(subject, tc.data); ok {
				t.Fatalf("seam accepted %q", tc.data)
			}
			if got := seam.Dropped(); got[tc.reason] != 1 || len(got) != 1 {
				t.Fatalf("drops = %v, want exactly one %q", got, tc.reason)
			}
		})
	}

	// Invariant 12 (authenticity): the sender is the one the subject names (the broker's
	// permissions let a service publish only subjects naming itself); an envelope claiming anyone
	// else, or a subject naming no sender, is dropped as forged_sender before any handler runs.
	t.Run("ForgedSenderIsDropped", func(t *testing.T) {
		t.Parallel()
		for _, subject := range []string{
			"streamseal.ctl.orders.shipping",    // shipping's subject, envelope claims billing
			"streamseal.ctl._all.shipping",      // a broadcast from shipping claiming billing
			"streamseal.ctl.orders",             // the old layout: no sender at all
			"streamseal.ctl.orders.Billing",     // not a service name
			"streamseal.ctl.orders.billing.x.y", // two tokens too many
			"streamseal.ctl._all.billing.x",     // a broadcast with a reply token
			"streamseal.evt.billing.x",          // not a control subject
		} {
			seam := &Seam{Self: "orders"}
			if _, _, ok := seam.Accept(subject, validEnvelope(t, "orders")); ok {
				t.Fatalf("seam accepted an envelope claiming billing on %s", subject)
			}
			if got := seam.Dropped(); got[DropForgedSender] != 1 || len(got) != 1 {
				t.Fatalf("%s: drops = %v, want exactly one %q", subject, got, DropForgedSender)
			}
		}
	})

	// Invariant 12: a reply subject is the private address of the one listener holding its
	// token (an operator's audit): a service's control endpoint refuses it, the listener takes only
	// its own token and nothing else, and the sender stays the one the subject names.
	t.Run("ReplySubjectsReachOnlyTheirListener", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			reply, subject string
			ok             bool
			reason         string
		}{
			{"", "streamseal.ctl.orders.billing.audit-1", false, DropForeignTarget},
			{"audit-1", "streamseal.ctl.orders.billing.audit-1", true, ""},
			{"audit-1", "streamseal.ctl.orders.billing.audit-2", false, DropForeignTarget},
			{"audit-1", "streamseal.ctl.orders.billing", false, DropForeignTarget},
			{"audit-1", "streamseal.ctl.orders.shipping.audit-1", false, DropForgedSender},
			{"audit-1", "streamseal.ctl.shipping.billing.audit-1", false, DropForeignTarget},
		} {
			seam := &Seam{Self: "orders", Reply: tc.reply}
			env, _, ok := seam.Accept(tc.subject, validEnvelope(t, "orders"))
			if ok != tc.ok || (ok && env.From != "billing") {
				t.Fatalf("seam with reply %q on %s: accepted %v, want %v", tc.reply, tc.subject, ok, tc.ok)
			}
			if got := seam.Dropped(); !tc.ok && (got[tc.reason] != 1 || len(got) != 1) {
				t.Fatalf("seam with reply %q on %s: drops = %v, want exactly one %q", tc.reply, tc.subject, got, tc.reason)
			}
		}
	})

	t.Run("DirectedAndBroadcastMessagesPass", func(t *testing.T) {
		t.Parallel()
		seam := &Seam{Self: "orders"}
		for _, to := range []string{"orders", ""} {
			subject := "streamseal.ctl.orders.billing"
			if to == "" {
				subject = "streamseal.ctl._all.billing"
			}
			env, _, ok := seam.Accept(subject, validEnvelope(t, to))
			if !ok || env.From != "billing" || env.Kind != KindRedeliveryRequest {
				t.Fatalf("seam refused a good message to %q: %+v", to, env)
			}
		}
		if len(seam.Dropped()) != 0 {
			t.Fatalf("drops = %v, want none", seam.Dropped())
		}
	})

	t.Run("AttachmentSurvivesByteForByte", func(t *testing.T) {
		t.Parallel()
		env, _ := NewEnvelope(KindRedeliveryBundle, "orders", "billing", map[string]any{"n": 1})
		attachment := []byte("{ \"raw\" :\n  true }\x00\xff")
		data, err := Encode(env, attachment)
		if err != nil {
			t.Fatal(err)
		}
		_, got, ok := (&Seam{Self: "billing"}).Accept("streamseal.ctl.billing.orders", data)
		if !ok || !bytes.Equal(got, attachment) {
			t.Fatalf("attachment = %q, ok %v; want %q", got, ok, attachment)
		}
	})
}

func TestTypeTokenIsInjectiveAndSubjectSafe(t *testing.T) {
	t.Parallel()
	seen := map[string]string{}
	for _, typ := range []string{"order.placed", "order~2Eplaced", "order placed", "a*b", "a>b", "Order_Placed-v2", "日本"} {
		tok := TypeToken(typ)
		if strings.ContainsAny(tok, ".*> \t\r\n") {
			t.Fatalf("token %q of %q is not one subject token", tok, typ)
		}
		if other, dup := seen[tok]; dup {
			t.Fatalf("types %q and %q share token %q", typ, other, tok)
		}
		seen[tok] = typ
	}
}

// FuzzDecode: no input makes the decoder panic, and whatever it accepts re-encodes to an
// envelope it accepts again with the same fields.
func FuzzDecode(f *testing.F) {
	f.Add(validEnvelope(f, "orders"))
	f.Add([]byte(`{"v":1}`))
	f.Add([]byte("{}\n\x00"))
	f.Add([]byte(`{"v":1,"kind":"redelivery_bundle","id":"i","from":"a","to":"b","sent_at":"2026-01-01T00:00:00Z","body":{}}` + "\nraw"))
	f.Fuzz(func(t *testing.T, data []byte) {
		env, attachment, err := Decode(data, 4096)
		if err != nil {
			return
		}
		again, err := Encode(env, attachment)
		if err != nil {
			t.Fatalf("accepted envelope does not re-encode: %v", err)
		}
		env2, attachment2, err := Decode(again, 1<<20)
		if err != nil {
			t.Fatalf("re-encoded envelope refused: %v", err)
		}
		if env2.Kind != env.Kind || env2.From != env.From || env2.To != env.To || env2.ID != env.ID ||
			!env2.SentAt.Equal(env.SentAt) || !bytes.Equal(attachment2, attachment) || !json.Valid(env2.Body) {
			t.Fatalf("round trip changed the envelope: %+v -> %+v", env, env2)
		}
	})
}

func TestManifestDigestRoundTripsInCompactForm(t *testing.T) {
	t.Parallel()
	for _, d := range []ManifestDigest{
		{Tenant: "acme", Type: "order.placed", X0: -9223372036854775808, X1: 42, N: 7},
		{Stream: "order-1", Tenant: "", Type: "t", X0: 1, X1: -1, N: 1},
	} {
		data, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var back ManifestDigest
		if err := json.Unmarshal(data, &back); err != nil || back != d {
			t.Fatalf("%s round-tripped to %+v, %v", data, back, err)
		}
	}
	var d ManifestDigest
	for _, bad := range []string{`{"tn":"a"}`, `["a","b",1,2]`, `["a","b","x",2,3]`} {
		if json.Unmarshal([]byte(bad), &d) == nil {
			t.Fatalf("%s was accepted", bad)
		}
	}
}

// A range fold travels as [part, type, x0, x1, n, pairs]; anything else is refused.
func TestRangeFoldRoundTripsInCompactForm(t *testing.T) {
	t.Parallel()
	f := RangeFold{Part: 15, Type: "order.placed", X0: -9223372036854775808, X1: 42, N: 7, Pairs: 3}
	data, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var back RangeFold
	if err := json.Unmarshal(data, &back); err != nil || back != f || string(data) != `[15,"order.placed",-9223372036854775808,42,7,3]` {
		t.Fatalf("%s round-tripped to %+v, %v", data, back, err)
	}
	for _, bad := range []string{`{"part":1}`, `[1,"t",1,2,3]`, `["1","t",1,2,3,4]`} {
		if json.Unmarshal([]byte(bad), &back) == nil {
			t.Fatalf("%s was accepted", bad)
		}
	}
}
