// values.go: the setters of the option table. Each kind parses a flag or environment value into
// one field, resets the field to its default, checks it against the values it accepts and renders
// both, so an option's range is written once, in its table entry.

package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/streamseal/streamseal/controlplane/wire"
)

// value is an option's setter, bound to one field.
type value interface {
	Set(string) error // parse into the field; the error says what was expected
	String() string   // the field's current value
	Type() string     // the placeholder -h shows after the flag ("duration", "int"); "" for a switch
	reset()           // set the field to its default
	defaultText() string
	accepted() string        // the values accepted, as help and errors show them; "" for any
	check(flag string) error // nil, or why the field's value is refused, naming flag
	empty() bool             // unset: what a required option refuses
}

// FormatDuration renders d in the shortest form time.ParseDuration reads back: the largest unit
// that divides it (60s is "1m", a week "168h", 10ms "10ms").
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	sign := ""
	if d < 0 {
		sign, d = "-", -d
	}
	for _, u := range []struct {
		unit time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}, {time.Microsecond, "us"}} {
		if d%u.unit == 0 {
			return sign + strconv.FormatInt(int64(d/u.unit), 10) + u.name
		}
	}
	return sign + strconv.FormatInt(int64(d), 10) + "ns"
}

// durationValue is a duration in [lo, hi]; with zeroMeans set, 0 is accepted too and means that.
type durationValue struct {
	p           *time.Duration
	def, lo, hi time.Duration
	zeroMeans   string // "forever": 0 is accepted outside [lo, hi]
	unchecked   bool   // any duration is accepted
}

func durationIn(p *time.Duration, def, lo, hi time.Duration) *durationValue {
	return &durationValue{p: p, def: def, lo: lo, hi: hi}
}

func durationAny(p *time.Duration, def time.Duration) *durationValue {
	return &durationValue{p: p, def: def, unchecked: true}
}

func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("expected a duration (e.g. 60s, 5m, 1h)")
	}
	*v.p = d
	return nil
}

func (v *durationValue) String() string {
	if v == nil || v.p == nil {
		return ""
	}
	return FormatDuration(*v.p)
}

func (v *durationValue) Type() string        { return "duration" }
func (v *durationValue) reset()              { *v.p = v.def }
func (v *durationValue) defaultText() string { return FormatDuration(v.def) }
func (v *durationValue) empty() bool         { return false }

func (v *durationValue) accepted() string {
	if v.unchecked {
		return ""
	}
	r := FormatDuration(v.lo) + ".." + FormatDuration(v.hi)
	if v.zeroMeans != "" {
		return "0 (" + v.zeroMeans + ") or " + r
	}
	return r
}

func (v *durationValue) check(flag string) error {
	d := *v.p
	if v.unchecked || (v.zeroMeans != "" && d == 0) || (d >= v.lo && d <= v.hi) {
		return nil
	}
	return fmt.Errorf("%s %s is out of range: expected %s", flag, FormatDuration(d), v.accepted())
}

// integer is the integer kinds of the table's fields.
type integer interface{ ~int | ~int64 }

// intValue is an integer in [lo, hi], or at least lo when open.
type intValue[T integer] struct {
	p           *T
	def, lo, hi T
	open        bool
}

func intIn[T integer](p *T, def, lo, hi T) *intValue[T] {
	return &intValue[T]{p: p, def: def, lo: lo, hi: hi}
}

// intAtLeast accepts lo and anything above it.
func intAtLeast[T integer](p *T, def, lo T) *intValue[T] {
	return &intValue[T]{p: p, def: def, lo: lo, open: true}
}

func (v *intValue[T]) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || int64(T(n)) != n {
		return fmt.Errorf("expected an integer")
	}
	*v.p = T(n)
	return nil
}

func (v *intValue[T]) String() string {
	if v == nil || v.p == nil {
		return ""
	}
	return strconv.FormatInt(int64(*v.p), 10)
}

func (v *intValue[T]) Type() string        { return "int" }
func (v *intValue[T]) reset()              { *v.p = v.def }
func (v *intValue[T]) defaultText() string { return strconv.FormatInt(int64(v.def), 10) }
func (v *intValue[T]) empty() bool         { return false }

func (v *intValue[T]) accepted() string {
	if v.open {
		return ">= " + strconv.FormatInt(int64(v.lo), 10)
	}
	return strconv.FormatInt(int64(v.lo), 10) + ".." + strconv.FormatInt(int64(v.hi), 10)
}

func (v *intValue[T]) check(flag string) error {
	if n := *v.p; n < v.lo || (!v.open && n > v.hi) {
		return fmt.Errorf("%s %d is out of range: expected %s", flag, n, v.accepted())
	}
	return nil
}

// textValue is any text (a URL, an address, a path, a schedule).
type textValue struct {
	p   *string
	def string
}

func text(p *string, def string) *textValue { return &textValue{p: p, def: def} }

func (v *textValue) Set(s string) error { *v.p = s; return nil }

func (v *textValue) String() string {
	if v == nil || v.p == nil {
		return ""
	}
	return *v.p
}

func (v *textValue) Type() string            { return "string" }
func (v *textValue) reset()                  { *v.p = v.def }
func (v *textValue) defaultText() string     { return v.def }
func (v *textValue) accepted() string        { return "" }
func (v *textValue) check(flag string) error { return nil }
func (v *textValue) empty() bool             { return *v.p == "" }

// choiceValue is one of a fixed set of words; noun names what they are ("mode").
type choiceValue struct {
	textValue
	noun    string
	choices []string
}

func oneOf(p *string, def, noun string, choices ...string) *choiceValue {
	return &choiceValue{textValue: textValue{p: p, def: def}, noun: noun, choices: choices}
}

func (v *choiceValue) Type() string { return v.noun }

func (v *choiceValue) accepted() string {
	if len(v.choices) < 2 {
		return strings.Join(v.choices, "")
	}
	return strings.Join(v.choices[:len(v.choices)-1], ", ") + " or " + v.choices[len(v.choices)-1]
}

func (v *choiceValue) check(flag string) error {
	for _, c := range v.choices {
		if *v.p == c {
			return nil
		}
	}
	return fmt.Errorf("%s %q is not a %s: expected %s", flag, *v.p, v.noun, v.accepted())
}

// ServiceNamePattern is what a service name looks like (wire.ValidServiceName decides).
const ServiceNamePattern = "[a-z][a-z0-9-]{0,62}"

// nameValue is a service name; empty is unset (a required option refuses it as missing).
type nameValue struct{ textValue }

func serviceName(p *string) *nameValue { return &nameValue{textValue{p: p}} }

func (v *nameValue) Type() string     { return "service" }
func (v *nameValue) accepted() string { return ServiceNamePattern }

func (v *nameValue) check(flag string) error {
	if *v.p == "" || wire.ValidServiceName(*v.p) {
		return nil
	}
	return fmt.Errorf("%s %q is not a service name: expected %s", flag, *v.p, ServiceNamePattern)
}

// SplitList splits a comma-separated list, trimming blanks and dropping empty items.
func SplitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// listValue is a comma-separated list; empty is unset.
type listValue struct{ p *[]string }

func list(p *[]string) *listValue { return &listValue{p: p} }

func (v *listValue) Set(s string) error { *v.p = SplitList(s); return nil }

func (v *listValue) String() string {
	if v == nil || v.p == nil {
		return ""
	}
	return strings.Join(*v.p, ",")
}

func (v *listValue) Type() string            { return "list" }
func (v *listValue) reset()                  { *v.p = nil }
func (v *listValue) defaultText() string     { return "" }
func (v *listValue) accepted() string        { return "" }
func (v *listValue) check(flag string) error { return nil }
func (v *listValue) empty() bool             { return len(*v.p) == 0 }

// Grant is one --grant or --grant-all-tenants value: Service may receive Types of Tenants, or
// of every tenant when AllTenants (said explicitly, never implied by naming no tenant).
type Grant struct {
	Service    string
	Types      []string
	Tenants    []string
	AllTenants bool
}

// Grants are the grants given on the command line, in order.
type Grants []Grant

// grantsValue collects repeated service=type1,type2@tenant1,tenant2 values (allTenants:
// service=type1,type2, every tenant) into one Grants list shared by both flags.
type grantsValue struct {
	p          *Grants
	allTenants bool
}

func grants(p *Grants, allTenants bool) *grantsValue {
	return &grantsValue{p: p, allTenants: allTenants}
}

func (v *grantsValue) Set(s string) error {
	service, rest, ok := strings.Cut(s, "=")
	if !ok || !wire.ValidServiceName(service) {
		return fmt.Errorf("expected %s with a service name %s", v.Type(), ServiceNamePattern)
	}
	g := Grant{Service: service, AllTenants: v.allTenants}
	if v.allTenants {
		g.Types = SplitList(rest)
	} else {
		types, tenants, ok := strings.Cut(rest, "@")
		if !ok {
			return fmt.Errorf("%s names no tenants: write %s=%s@tenant1,tenant2, or --grant-all-tenants %s=%s",
				s, service, rest, service, rest)
		}
		g.Types = SplitList(types)
		if g.Tenants = SplitList(tenants); len(g.Tenants) == 0 {
			g.Tenants = []string{""}
		}
	}
	if len(g.Types) == 0 {
		return fmt.Errorf("expected %s naming at least one event type", v.Type())
	}
	*v.p = append(*v.p, g)
	return nil
}

func (v *grantsValue) String() string {
	if v == nil || v.p == nil || len(*v.p) == 0 {
		return ""
	}
	return fmt.Sprint([]Grant(*v.p))
}

func (v *grantsValue) Type() string {
	if v.allTenants {
		return "service=types"
	}
	return "service=types@tenants"
}
func (v *grantsValue) reset()                  { *v.p = nil }
func (v *grantsValue) defaultText() string     { return "" }
func (v *grantsValue) accepted() string        { return "" }
func (v *grantsValue) check(flag string) error { return nil }
func (v *grantsValue) empty() bool             { return len(*v.p) == 0 }

// switchValue is a boolean flag: present is true.
type switchValue struct{ p *bool }

func onOff(p *bool) *switchValue { return &switchValue{p: p} }

func (v *switchValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("expected true or false")
	}
	*v.p = b
	return nil
}

func (v *switchValue) String() string {
	if v == nil || v.p == nil {
		return ""
	}
	return strconv.FormatBool(*v.p)
}

func (v *switchValue) IsBoolFlag() bool        { return true }
func (v *switchValue) Type() string            { return "" }
func (v *switchValue) reset()                  { *v.p = false }
func (v *switchValue) defaultText() string     { return "" }
func (v *switchValue) accepted() string        { return "" }
func (v *switchValue) check(flag string) error { return nil }
func (v *switchValue) empty() bool             { return !*v.p }

// fileValue is the path of a file the command reads at start: it must be readable.
type fileValue struct{ textValue }

func file(p *string) *fileValue { return &fileValue{textValue{p: p}} }

func (v *fileValue) Type() string { return "file" }

func (v *fileValue) check(flag string) error {
	if *v.p == "" {
		return nil
	}
	f, err := os.Open(*v.p)
	if err == nil {
		_, err = f.Read(make([]byte, 1))
		f.Close()
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s %s is not readable: %w", flag, *v.p, err)
	}
	return nil
}

// secretValue is a password or token: it renders as xxxxx once set, so no help, error or dump of
// the options shows it.
type secretValue struct{ textValue }

func secret(p *string) *secretValue { return &secretValue{textValue{p: p}} }

func (v *secretValue) String() string {
	if v == nil || v.p == nil || *v.p == "" {
		return ""
	}
	return "xxxxx"
}
