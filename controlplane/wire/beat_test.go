package wire

import (
	"slices"
	"strings"
	"testing"
)

// matches is NATS subject matching ('*' one token, '>' the rest) for the layout tests.
func matches(filter, subject string) bool {
	f, s := strings.Split(filter, "."), strings.Split(subject, ".")
	for i, tok := range f {
		if tok == ">" {
			return len(s) > i
		}
		if i >= len(s) || (tok != "*" && tok != s[i]) {
			return false
		}
	}
	return len(f) == len(s)
}

// Liveness (issue 21 item 3) and invariant 12: an origin's beat rides a subject of its own that
// names it, that no event filter matches (a beat never reaches an event consumer, an event never
// a beat consumer), that lies under what the origin may publish, and that its beat filter (named
// origin or any) matches.
func TestBeatSubjectIsTheOriginsOwnAndNoEventFilterMatchesIt_Liveness(t *testing.T) {
	subject := BeatSubject("orders")
	if got, ok := BeatSender(subject); !ok || got != "orders" {
		t.Fatalf("BeatSender(%q) = %q, %v; want orders", subject, got, ok)
	}
	if got, ok := EventSender(subject); !ok || got != "orders" {
		t.Fatalf("EventSender(%q) = %q, %v; want orders (the inbox's forged-sender check applies)", subject, got, ok)
	}
	for _, f := range []string{LiveFilter("", "*", "order.placed"), LiveFilter("orders", "*", "_beat"),
		LiveTenantFilter("orders", "_beat", "order.placed"), LiveTenantFilter("orders", "", "_beat")} {
		if matches(f, subject) {
			t.Errorf("event filter %q matches the beat subject %q", f, subject)
		}
	}
	for _, ev := range []string{LiveSubject("orders", "_beat", "x"), LiveSubject("orders", "", "_beat")} {
		for _, f := range []string{BeatFilter("orders"), BeatFilter("*")} {
			if matches(f, ev) {
				t.Errorf("beat filter %q matches the event subject %q", f, ev)
			}
		}
	}
	if !matches(OriginEvents("orders"), subject) || matches(OriginEvents("billing"), subject) {
		t.Errorf("beat subject %q must lie under OriginEvents(orders) only", subject)
	}
	if !matches(BeatFilter("orders"), subject) || !matches(BeatFilter(""), subject) || matches(BeatFilter("billing"), subject) {
		t.Errorf("beat filters do not select %q by origin", subject)
	}
	for _, bad := range []string{"streamseal.evt.orders.acme.t", "streamseal.evt.Orders._beat", "streamseal.ctl.orders._beat"} {
		if got, ok := BeatSender(bad); ok {
			t.Errorf("BeatSender(%q) = %q, want not a beat subject", bad, got)
		}
	}
	if got := BeatFilters([]string{"shipping", "orders", "orders"}); !slices.Equal(got, []string{BeatFilter("orders"), BeatFilter("shipping")}) {
		t.Errorf("BeatFilters(named) = %v", got)
	}
	if got := BeatFilters([]string{"orders", "*"}); !slices.Equal(got, []string{BeatFilter("*")}) {
		t.Errorf("BeatFilters(with any origin) = %v: the any-origin filter alone, so no beat reaches two consumers", got)
	}
}

// Bad input gets a clear error: a beat that does not decode, or claims an impossible window.
func TestDecodeBeatRefusesMalformedBeats(t *testing.T) {
	m, err := BeatMessage(Beat{Origin: "orders", IntervalS: 1, From: 3, To: 5})
	if err != nil {
		t.Fatal(err)
	}
	if !IsBeat(m.Header) || IsCheckpoint(m.Header) || m.Subject != BeatSubject("orders") {
		t.Fatalf("beat message: subject %q headers %v", m.Subject, m.Header)
	}
	if b, err := DecodeBeat(m.Data); err != nil || b.Origin != "orders" || b.From != 3 || b.To != 5 {
		t.Fatalf("DecodeBeat = %+v, %v", b, err)
	}
	for _, bad := range []string{`{`, `{"v":1,"origin":"orders","interval_s":1,"from":5,"to":3}`,
		`{"v":1,"origin":"Orders","interval_s":1}`, `{"v":1,"origin":"orders","interval_s":0}`,
		`{"v":1,"origin":"orders","interval_s":1,"extra":1}`} {
		if _, err := DecodeBeat([]byte(bad)); err == nil {
			t.Errorf("DecodeBeat(%s) accepted", bad)
		}
	}
}

// Invariant 15 (issue 17): a beat lists the lanes its round checkpointed, split over parts of
// at most BeatLanesPerPart; a beat of an older sender (no parts, no lanes) still decodes; a beat
// whose parts or lanes are not what an encoder writes is refused, never half taken.
func TestBeatListsItsRoundsLanesInPartsAndAnOlderSendersBeatStillDecodes_ReadersNeverSkip(t *testing.T) {
	old := []byte(`{"v":1,"origin":"orders","interval_s":60,"generation":0,"at":"2026-01-01T00:00:00Z","from":3,"to":9}`)
	b, err := DecodeBeat(old)
	if err != nil || b.Parts != 0 || len(b.Lanes) != 0 {
		t.Fatalf("an older sender's beat: %+v, %v; want accepted with no parts", b, err)
	}
	lanes := make([]BeatLane, BeatLanesPerPart+1)
	for i := range lanes {
		lanes[i] = BeatLane{Tenant: "acme", Type: "order.placed", Last: int64(i + 1)}
	}
	parts := BeatParts(Beat{Origin: "orders", IntervalS: 60, From: 3, To: 9}, lanes)
	if len(parts) != 2 || len(parts[0].Lanes) != BeatLanesPerPart || len(parts[1].Lanes) != 1 || parts[1].Part != 2 || parts[1].Parts != 2 {
		t.Fatalf("BeatParts over %d lanes: %d parts", len(lanes), len(parts))
	}
	if quiet := BeatParts(Beat{Origin: "orders", IntervalS: 60}, nil); len(quiet) != 1 || quiet[0].Part != 1 || quiet[0].Parts != 1 || len(quiet[0].Lanes) != 0 {
		t.Fatalf("a quiet round's beat: %+v; want one part listing nothing", quiet)
	}
	for _, p := range parts {
		m, err := BeatMessage(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Data) > 128<<10 {
			t.Fatalf("part %d of %d lanes is %d bytes: want far below the broker's max payload", p.Part, len(p.Lanes), len(m.Data))
		}
		got, err := DecodeBeat(m.Data)
		if err != nil || got.Part != p.Part || got.Parts != p.Parts || !slices.Equal(got.Lanes, p.Lanes) {
			t.Fatalf("part %d did not round-trip: %v", p.Part, err)
		}
	}
	for name, body := range map[string]string{
		"part beyond parts":  `{"v":1,"origin":"orders","interval_s":60,"generation":0,"at":"2026-01-01T00:00:00Z","from":3,"to":9,"part":3,"parts":2}`,
		"lanes, no parts":    `{"v":1,"origin":"orders","interval_s":60,"generation":0,"at":"2026-01-01T00:00:00Z","from":3,"to":9,"lanes":[["","t",1]]}`,
		"lane without type":  `{"v":1,"origin":"orders","interval_s":60,"generation":0,"at":"2026-01-01T00:00:00Z","from":3,"to":9,"part":1,"parts":1,"lanes":[["","",1]]}`,
		"lane at 0":          `{"v":1,"origin":"orders","interval_s":60,"generation":0,"at":"2026-01-01T00:00:00Z","from":3,"to":9,"part":1,"parts":1,"lanes":[["","t",0]]}`,
		"lane as object":     `{"v":1,"origin":"orders","interval_s":60,"generation":0,"at":"2026-01-01T00:00:00Z","from":3,"to":9,"part":1,"parts":1,"lanes":[{"tenant":"","type":"t","last":1}]}`,
		"lane of 2 fields":   `{"v":1,"origin":"orders","interval_s":60,"generation":0,"at":"2026-01-01T00:00:00Z","from":3,"to":9,"part":1,"parts":1,"lanes":[["","t"]]}`,
		"lane last a string": `{"v":1,"origin":"orders","interval_s":60,"generation":0,"at":"2026-01-01T00:00:00Z","from":3,"to":9,"part":1,"parts":1,"lanes":[["","t","1"]]}`,
	} {
		if _, err := DecodeBeat([]byte(body)); err == nil {
			t.Errorf("%s: decoded; want refused", name)
		}
	}
}

// Invariant 13: whatever arrives on a beat subject decodes to a beat whose parts and lanes are
// what an encoder writes, or is refused; never a panic.
func FuzzDecodeBeat(f *testing.F) {
	for _, p := range BeatParts(Beat{Origin: "orders", IntervalS: 60, From: 3, To: 9},
		[]BeatLane{{Tenant: "acme", Type: "order.placed", Last: 4}, {Tenant: "", Type: "order.paid", Last: 1}}) {
		m, err := BeatMessage(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(m.Data)
	}
	f.Add([]byte(`{"v":1,"origin":"orders","interval_s":60,"generation":0,"at":"2026-01-01T00:00:00Z","from":3,"to":9}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := DecodeBeat(data)
		if err != nil {
			return
		}
		if b.Parts == 0 && (b.Part != 0 || len(b.Lanes) > 0) || b.Parts > 0 && (b.Part < 1 || b.Part > b.Parts) || len(b.Lanes) > BeatLanesPerPart {
			t.Fatalf("decoded a beat no encoder writes: part %d of %d, %d lanes", b.Part, b.Parts, len(b.Lanes))
		}
		for _, l := range b.Lanes {
			if l.Type == "" || l.Last < 1 {
				t.Fatalf("decoded lane %+v", l)
			}
		}
	})
}
