// Package natsauth computes least-privilege NATS permissions for streamseal's services from a
// topology (each service and what it consumes), using only the subject layout of package wire
// (invariant 12: the broker binds every subject a service publishes to the identity that
// authenticated). It renders them as a nats-server `authorization { users = [...] }` block
// (`streamseal nats-config`) and as the users of the embedded server. It owns permissions and
// their rendering only: it opens no connection and touches no database.
//
// What a service S may do, and nothing else:
//
//	publish   streamseal.evt.S.>                  its own events, checkpoints and beats (streamseal.evt.S._beat)
//	          streamseal.ctl.*.S                  control messages naming S as sender (directed and _all)
//	          streamseal.ctl.*.S.*                answers naming S as sender on a requester's reply address
//	          $JS.API.STREAM.INFO.<stream>        the two streamseal streams: read at start
//	          $JS.API.STREAM.CREATE.<stream>      and create when missing (a create never alters an existing stream)
//	          $JS.API.CONSUMER.CREATE.<stream>.<durable>.<filter>   its own durables, each pinned to its one filter
//	          $JS.API.CONSUMER.{INFO,DELETE}.<stream>.<durable>
//	          $JS.API.CONSUMER.MSG.NEXT.<stream>.<durable>          pull from its own durables
//	          $JS.ACK.<stream>.<durable>.>                          acknowledge what they delivered
//	          $JS.API.CONSUMER.DELETE.STREAMSEAL_CONTROL.streamseal-control-S   its own control durable of the old layout (removed at start)
//	subscribe _INBOX_S.>                          its reply prefix: pulls, publish acks, request replies
//	          streamseal.ctl.S.*                  its directed control subjects (core subscribers: operator commands)
//	          streamseal.ctl.S.*.*                its reply addresses (an operator's audit reads its answers there)
//
// So S cannot publish as another origin or sender, read another service's consumer, widen its
// own filters, update, purge or delete a stream, read messages directly (STREAM.MSG.GET, DIRECT.GET),
// or read anyone's replies or control traffic. Durables follow wire.InboxDurable and
// wire.ControlDurable: one filter each, so the create subject names both.
package natsauth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/streamseal/streamseal/controlplane/wire"
)

// AnyOrigin in Consumption.Origin is every origin.
const AnyOrigin = "*"

// Topology is the services of one bus and what each consumes; the file `streamseal nats-config
// --topology` reads is its JSON.
type Topology struct {
	Services []Service `json:"services"`
}

// Service is one service and the events it consumes.
type Service struct {
	Name     string        `json:"name"`
	Consumes []Consumption `json:"consumes,omitempty"`
}

// Consumption is a set of event types a service consumes from an origin (AnyOrigin: any), for
// the named tenants or, explicitly, every tenant (invariant 11: never implied by an empty list).
// A named tenant is literal ("" is the single-tenant service's tenant, "*" a tenant called "*"),
// as in the database's grants and subscriptions.
type Consumption struct {
	Origin     string   `json:"origin"`
	Types      []string `json:"types"`
	Tenants    []string `json:"tenants,omitempty"`
	AllTenants bool     `json:"all_tenants,omitempty"`
}

// Permissions are one user's allow lists; anything not allowed is denied.
type Permissions struct {
	Publish   []string
	Subscribe []string
}

// Admin is everything: the identity that sets up streams and inspects the bus (the embedded
// server's own setup). No service runs as it.
var Admin = Permissions{Publish: []string{">"}, Subscribe: []string{">"}}

// LoadTopology reads a topology file (JSON; unknown fields refused) and validates it.
func LoadTopology(path string) (Topology, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Topology{}, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var t Topology
	if err := dec.Decode(&t); err != nil {
		return Topology{}, fmt.Errorf("topology %s: %w", path, err)
	}
	if err := t.Validate(); err != nil {
		return Topology{}, fmt.Errorf("topology %s: %w", path, err)
	}
	return t, nil
}

// Validate refuses a topology permissions cannot be computed for: no service, a name that is
// not a service name or appears twice, a consumption without types or without tenants.
func (t Topology) Validate() error {
	if len(t.Services) == 0 {
		return errors.New("no services")
	}
	var errs []error
	seen := map[string]bool{}
	for i, s := range t.Services {
		if !wire.ValidServiceName(s.Name) {
			errs = append(errs, fmt.Errorf("services[%d]: name %q is not a service name", i, s.Name))
			continue
		}
		if seen[s.Name] {
			errs = append(errs, fmt.Errorf("services[%d]: %s appears twice", i, s.Name))
		}
		seen[s.Name] = true
		for j, c := range s.Consumes {
			at := fmt.Sprintf("%s.consumes[%d]", s.Name, j)
			if c.Origin != "" && c.Origin != AnyOrigin && !wire.ValidServiceName(c.Origin) {
				errs = append(errs, fmt.Errorf("%s: origin %q is not a service name or %q", at, c.Origin, AnyOrigin))
			}
			if len(c.Types) == 0 {
				errs = append(errs, fmt.Errorf("%s: no types", at))
			}
			if slices.Contains(c.Types, "") {
				errs = append(errs, fmt.Errorf("%s: an empty event type", at))
			}
			switch {
			case c.AllTenants && len(c.Tenants) > 0:
				errs = append(errs, fmt.Errorf("%s: names tenants and all_tenants both: say one", at))
			case !c.AllTenants && len(c.Tenants) == 0:
				errs = append(errs, fmt.Errorf(`%s: no tenants: name them, or say "all_tenants": true`, at))
			}
		}
	}
	return errors.Join(errs...)
}

// Service returns the named service.
func (t Topology) Service(name string) (Service, bool) {
	i := slices.IndexFunc(t.Services, func(s Service) bool { return s.Name == name })
	if i < 0 {
		return Service{}, false
	}
	return t.Services[i], true
}

// InboxFilters are the event filters s's inbox consumes, one durable each: one per (origin,
// tenant, type) its consumptions name, deduplicated, in order, then the beat filter
// (wire.BeatFilter) of each origin its consumptions name, AnyOrigin included: the inbox takes
// the one any-origin beat filter or the named ones (wire.BeatFilters), both allowed here.
func (s Service) InboxFilters() []string {
	var filters []string
	add := func(f string) {
		if !slices.Contains(filters, f) {
			filters = append(filters, f)
		}
	}
	for _, c := range s.Consumes {
		for _, typ := range c.Types {
			if c.AllTenants {
				add(wire.InboxFilter(c.Origin, "", true, typ))
			}
			for _, tenant := range c.Tenants {
				add(wire.InboxFilter(c.Origin, tenant, false, typ))
			}
		}
	}
	for _, c := range s.Consumes {
		add(wire.BeatFilter(c.Origin))
	}
	return filters
}

// Permissions are what s may publish and subscribe to.
func (s Service) Permissions() Permissions {
	self := s.Name
	p := Permissions{
		Publish: []string{
			wire.OriginEvents(self),
			wire.ControlSubjectFrom("*", self),
			wire.ReplySubject("*", self, "*"),
		},
		Subscribe: []string{
			wire.InboxPrefix(self) + ".>",
			wire.ControlSubjectFrom(self, "*"),
			wire.ReplyFilter(self, "*"),
		},
	}
	for _, stream := range []string{wire.EventsStream, wire.ControlStream} {
		p.Publish = append(p.Publish, "$JS.API.STREAM.INFO."+stream, "$JS.API.STREAM.CREATE."+stream)
	}
	durable := func(stream, name, filter string) {
		p.Publish = append(p.Publish,
			"$JS.API.CONSUMER.CREATE."+stream+"."+name+"."+filter,
			"$JS.API.CONSUMER.INFO."+stream+"."+name,
			"$JS.API.CONSUMER.DELETE."+stream+"."+name,
			"$JS.API.CONSUMER.MSG.NEXT."+stream+"."+name,
			"$JS.ACK."+stream+"."+name+".>",
		)
	}
	for _, f := range s.InboxFilters() {
		durable(wire.EventsStream, wire.InboxDurable(self, f), f)
	}
	for _, f := range wire.ControlFilters(self) {
		durable(wire.ControlStream, wire.ControlDurable(self, f), f)
	}
	// Its own control durable of the layout before the sender joined the subject, which its
	// control endpoint removes at start: refused, that request went unanswered and held the
	// start for the client's API timeout.
	p.Publish = append(p.Publish, "$JS.API.CONSUMER.DELETE."+wire.ControlStream+"."+wire.LegacyControlDurable(self))
	return p
}

// server is p as nats-server takes it.
func (p Permissions) server() *server.Permissions {
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: slices.Clone(p.Publish)},
		Subscribe: &server.SubjectPermission{Allow: slices.Clone(p.Subscribe)},
	}
}

// Users are the topology's services (and an admin) as user/password users of a server, each
// service named after itself: passwords[name] for each service and for admin.
func (t Topology) Users(admin string, passwords map[string]string) []*server.User {
	users := []*server.User{{Username: admin, Password: passwords[admin], Permissions: Admin.server()}}
	for _, s := range t.Services {
		users = append(users, &server.User{Username: s.Name, Password: passwords[s.Name], Permissions: s.Permissions().server()})
	}
	return users
}

// NkeyUsers are the topology's services (and an admin) as NKey users: publicKeys[name] for each
// service and for admin.
func (t Topology) NkeyUsers(admin string, publicKeys map[string]string) []*server.NkeyUser {
	users := []*server.NkeyUser{{Nkey: publicKeys[admin], Permissions: Admin.server()}}
	for _, s := range t.Services {
		users = append(users, &server.NkeyUser{Nkey: publicKeys[s.Name], Permissions: s.Permissions().server()})
	}
	return users
}

// AdminUser names the admin identity in generated configurations and seed files: not a
// service name, so no service can be mistaken for it.
const AdminUser = "_admin"

// NkeyCredential renders a user identified by its NKey public key.
func NkeyCredential(publicKey string) string { return "nkey: " + quote(publicKey) }

// PasswordCredential renders a user named name whose password nats-server reads from its
// environment variable PasswordVariable(name) at start, so no secret is written into the file.
func PasswordCredential(name string) string {
	return "user: " + quote(name) + ", password: $" + PasswordVariable(name)
}

// PasswordVariable is the environment variable of nats-server holding name's password:
// STREAMSEAL_NATS_PASSWORD_<NAME> (upper case, '-' as '_'; the admin's is ..._ADMIN).
func PasswordVariable(name string) string {
	return "STREAMSEAL_NATS_PASSWORD_" + strings.ToUpper(strings.ReplaceAll(strings.TrimPrefix(name, "_"), "-", "_"))
}

// ServerConfig is the nats-server configuration block authorizing the topology's services and
// AdminUser, each user commented with its name and identified by credential(name)
// (NkeyCredential or PasswordCredential).
func (t Topology) ServerConfig(credential func(name string) string) string {
	var b strings.Builder
	b.WriteString("# Generated by `streamseal nats-config` (controlplane/natsauth): one user per service,\n")
	b.WriteString("# least privilege over streamseal's subject layout. Regenerate when the topology changes.\n")
	b.WriteString("authorization {\n  users = [\n")
	user := func(name string, p Permissions) {
		fmt.Fprintf(&b, "    # %s\n    {\n      %s\n      permissions: {\n", name, credential(name))
		fmt.Fprintf(&b, "        publish: { allow: %s }\n", list(p.Publish))
		fmt.Fprintf(&b, "        subscribe: { allow: %s }\n", list(p.Subscribe))
		b.WriteString("      }\n    }\n")
	}
	user(AdminUser, Admin)
	for _, s := range t.Services {
		user(s.Name, s.Permissions())
	}
	b.WriteString("  ]\n}\n")
	return b.String()
}

// Seeds gives each of names an NKey user seed in dir as <name>.nk (mode 0600; dir is created
// 0700), keeping a seed that is already there so regenerating the configuration rotates no key,
// and returns their public keys by name.
func Seeds(dir string, names []string) (map[string]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	keys := map[string]string{}
	for _, name := range names {
		path := filepath.Join(dir, name+".nk")
		seed, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			kp, err := nkeys.CreateUser()
			if err != nil {
				return nil, err
			}
			if seed, err = kp.Seed(); err != nil {
				return nil, err
			}
			if err := os.WriteFile(path, append(seed, '\n'), 0o600); err != nil {
				return nil, err
			}
		} else if err != nil {
			return nil, err
		}
		kp, err := nkeys.ParseDecoratedNKey(seed)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if keys[name], err = kp.PublicKey(); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if !nkeys.IsValidPublicUserKey(keys[name]) {
			return nil, fmt.Errorf("%s is not an NKey user seed", path)
		}
	}
	return keys, nil
}

// Names are the topology's services and AdminUser: the users a configuration holds.
func (t Topology) Names() []string {
	names := []string{AdminUser}
	for _, s := range t.Services {
		names = append(names, s.Name)
	}
	return names
}

// list renders subjects as a nats-server configuration array, one per line.
func list(subjects []string) string {
	quoted := make([]string, len(subjects))
	for i, s := range subjects {
		quoted[i] = quote(s)
	}
	if len(quoted) <= 2 {
		return "[" + strings.Join(quoted, ", ") + "]"
	}
	return "[\n          " + strings.Join(quoted, ",\n          ") + "\n        ]"
}

// quote is s as a double-quoted configuration string (subjects hold no quote or backslash: the
// type and tenant tokens escape every byte beyond [A-Za-z0-9_-]).
func quote(s string) string { return `"` + s + `"` }
