// Package dbtest gives each Go test its own freshly migrated streamseal database.
//
// One throwaway cluster per test binary (or the server STREAMSEAL_TEST_DATABASE_URL names), one
// template database migrated through the real migrate path and named after a hash of the SQL it
// ran, and one clone of it per test (CREATE DATABASE … TEMPLATE, milliseconds). A failing test
// keeps its database and logs its URL; a passing one drops it.
package dbtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/streamseal/streamseal/controlplane/migrate"
	"github.com/streamseal/streamseal/internal/pgcluster"
	streamsql "github.com/streamseal/streamseal/sql"
)

// EnvDatabaseURL points the tests at an existing server instead of a throwaway cluster. The
// role must be allowed to create databases.
const EnvDatabaseURL = "STREAMSEAL_TEST_DATABASE_URL"

var (
	mu           sync.Mutex
	server       *Server
	serverErr    error
	databaseSeq  atomic.Int64
	templateOnce sync.Once
	templateName string
	templateErr  error
)

// Server is a PostgreSQL server tests create databases on.
type Server struct {
	cluster *pgcluster.Cluster // nil when EnvDatabaseURL was given
	baseURL string             // any database on the server, used for admin statements
}

// Main runs a package's tests and stops the throwaway cluster afterwards. Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	mu.Lock()
	if server != nil && server.cluster != nil {
		if err := server.cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "dbtest: stop cluster:", err)
		}
	}
	mu.Unlock()
	os.Exit(code)
}

// StartServer returns the shared server, starting a throwaway cluster on first use.
func StartServer(ctx context.Context) (*Server, error) {
	mu.Lock()
	defer mu.Unlock()
	if server != nil || serverErr != nil {
		return server, serverErr
	}
	if u := os.Getenv(EnvDatabaseURL); u != "" {
		server = &Server{baseURL: u}
		return server, nil
	}
	cluster, err := pgcluster.Start(ctx)
	if err != nil {
		serverErr = err
		return nil, err
	}
	server = &Server{cluster: cluster, baseURL: cluster.URL("postgres")}
	return server, nil
}

// URL returns the URL of database on this server.
func (s *Server) URL(database string) string {
	u, err := url.Parse(s.baseURL)
	if err != nil {
		panic(fmt.Sprintf("dbtest: bad server URL %q: %v", s.baseURL, err))
	}
	u.Path = "/" + database
	return u.String()
}

// Cluster returns the throwaway cluster, or nil when the server is an external one.
func (s *Server) Cluster() *pgcluster.Cluster { return s.cluster }

// Exec runs one admin statement (CREATE/DROP DATABASE) on the server.
func (s *Server) Exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, s.baseURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// NewDatabase creates a migrated database and returns its URL; it does not name the service.
func (s *Server) NewDatabase(ctx context.Context, prefix string) (string, error) {
	tmpl, err := s.template(ctx)
	if err != nil {
		return "", err
	}
	name := fmt.Sprintf("%s_%d_%d", prefix, os.Getpid(), databaseSeq.Add(1))
	if err := s.Exec(ctx, fmt.Sprintf("create database %s template %s", pgx.Identifier{name}.Sanitize(), pgx.Identifier{tmpl}.Sanitize())); err != nil {
		return "", fmt.Errorf("clone template %s: %w", tmpl, err)
	}
	return s.URL(name), nil
}

// NewICUDatabase creates a database whose default collation is the ICU locale icuLocale (e.g.
// "en-US": text sorts by language rules, not bytes), migrated through the real migrate path, and
// returns its URL; it does not name the service. Such a database cannot be cloned from the
// template (whose collation is the cluster's C), so it is built from template0 and migrated
// whole: seconds, not milliseconds. Tests of what crosses between databases that sort text
// differently use it (two services' databases need not share a collation).
func (s *Server) NewICUDatabase(ctx context.Context, prefix, icuLocale string) (string, error) {
	name := fmt.Sprintf("%s_%d_%d", prefix, os.Getpid(), databaseSeq.Add(1))
	if err := s.Exec(ctx, fmt.Sprintf("create database %s template template0 encoding 'UTF8' locale_provider icu icu_locale %s locale 'C'",
		pgx.Identifier{name}.Sanitize(), quoteLiteral(icuLocale))); err != nil {
		return "", fmt.Errorf("create ICU database (%s): %w", icuLocale, err)
	}
	if _, err := migrate.MigrateURL(ctx, s.URL(name)); err != nil {
		return "", fmt.Errorf("migrate ICU database (%s): %w", icuLocale, err)
	}
	return s.URL(name), nil
}

// quoteLiteral quotes s as an SQL string literal.
func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// DropDatabase drops a database created by NewDatabase.
func (s *Server) DropDatabase(ctx context.Context, databaseURL string) error {
	u, err := url.Parse(databaseURL)
	if err != nil {
		return err
	}
	name := u.Path[1:]
	return s.Exec(ctx, fmt.Sprintf("drop database if exists %s with (force)", pgx.Identifier{name}.Sanitize()))
}

// template builds (once per process, and once per server for a given SQL hash) the migrated
// template database. An advisory lock keeps concurrent test binaries from building it twice.
func (s *Server) template(ctx context.Context) (string, error) {
	templateOnce.Do(func() {
		templateName = "streamseal_template_" + sqlHash()[:16]
		templateErr = s.buildTemplate(ctx, templateName)
	})
	return templateName, templateErr
}

func (s *Server) buildTemplate(ctx context.Context, name string) error {
	conn, err := pgx.Connect(ctx, s.baseURL)
	if err != nil {
		return fmt.Errorf("connect to test server: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "select pg_advisory_lock(hashtextextended('streamseal.dbtest.template', 0))"); err != nil {
		return err
	}
	var exists bool
	if err := conn.QueryRow(ctx, "select exists (select 1 from pg_database where datname = $1)", name).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	building := name + "_building"
	if _, err := conn.Exec(ctx, fmt.Sprintf("drop database if exists %s", pgx.Identifier{building}.Sanitize())); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf("create database %s", pgx.Identifier{building}.Sanitize())); err != nil {
		return fmt.Errorf("create template database: %w", err)
	}
	if _, err := migrate.MigrateURL(ctx, s.URL(building)); err != nil {
		return fmt.Errorf("migrate template database: %w", err)
	}
	// Renamed only once complete, so a crash mid-build never leaves a half-migrated template.
	_, err = conn.Exec(ctx, fmt.Sprintf("alter database %s rename to %s", pgx.Identifier{building}.Sanitize(), pgx.Identifier{name}.Sanitize()))
	return err
}

// sqlHash identifies the SQL a template ran: migrations and code package, in path order.
func sqlHash() string {
	h := sha256.New()
	for _, fsys := range []fs.FS{streamsql.Migrations(), streamsql.Functions()} {
		var paths []string
		_ = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				paths = append(paths, p)
			}
			return nil
		})
		sort.Strings(paths)
		for _, p := range paths {
			b, _ := fs.ReadFile(fsys, p)
			fmt.Fprintf(h, "%s\x00%d\x00", p, len(b))
			h.Write(b)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// New returns the URL of a fresh, migrated database for t, on the shared server. The database
// is dropped when t passes and kept (its URL logged) when t fails.
func New(t testing.TB) string {
	t.Helper()
	return newDatabase(t, "")
}

// NewICU is New with a database whose default collation is the ICU locale icuLocale (see
// Server.NewICUDatabase), for tests of services whose databases sort text differently.
func NewICU(t testing.TB, icuLocale string) string {
	t.Helper()
	return newDatabase(t, icuLocale)
}

func newDatabase(t testing.TB, icuLocale string) string {
	t.Helper()
	ctx := context.Background()
	s, err := StartServer(ctx)
	if err != nil {
		t.Fatalf("start test PostgreSQL: %v", err)
	}
	var databaseURL string
	if icuLocale == "" {
		databaseURL, err = s.NewDatabase(ctx, "streamseal_test")
	} else {
		databaseURL, err = s.NewICUDatabase(ctx, "streamseal_test_icu", icuLocale)
	}
	if err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			if s.cluster != nil {
				t.Logf("failing test's database: %s (the throwaway cluster is removed at exit; set %s to keep it)", databaseURL, EnvDatabaseURL)
			} else {
				t.Logf("kept the failing test's database: %s", databaseURL)
			}
			return
		}
		if err := s.DropDatabase(context.Background(), databaseURL); err != nil {
			t.Logf("drop test database: %v", err)
		}
	})
	return databaseURL
}
