// Package pgcluster starts and stops a throwaway PostgreSQL cluster from the machine's server
// binaries: initdb into a temp dir, durability off (fsync, synchronous_commit, full-page writes),
// reachable only through a unix socket in that dir. Tests, the demo and benchmarks use it; it
// must never be pointed at data anyone keeps.
//
// PostgreSQL refuses to run as root, so when the process is root the cluster runs as the
// "postgres" system user through runuser, in a temp dir that user owns.
package pgcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ErrNoServerBinaries means no PostgreSQL 14+ initdb/postgres/pg_ctl were found.
var ErrNoServerBinaries = errors.New("PostgreSQL server binaries (initdb, pg_ctl, postgres) not found: install PostgreSQL 14 or newer (Debian: apt-get install postgresql-15) or put its bin dir first in PATH")

// Cluster is a running throwaway cluster. Stop removes it and everything in it.
type Cluster struct {
	binDir string
	dir    string // owns data/, the socket and the log
	runAs  *user.User
	// durable keeps the server's durability defaults instead of turning them off.
	durable bool
}

// Start initializes and starts a cluster in a fresh temp dir and waits until it accepts
// connections (pg_ctl -w). The caller must call Stop.
func Start(ctx context.Context) (*Cluster, error) { return start(ctx, false) }

// StartDurable is Start with durability on (fsync, synchronous_commit and full-page writes, the
// server's defaults): what users run, for benchmarks that report the cost there too.
func StartDurable(ctx context.Context) (*Cluster, error) { return start(ctx, true) }

func start(ctx context.Context, durable bool) (*Cluster, error) {
	binDir, err := FindBinDir()
	if err != nil {
		return nil, err
	}
	c := &Cluster{binDir: binDir, durable: durable}
	if os.Geteuid() == 0 {
		if c.runAs, err = user.Lookup("postgres"); err != nil {
			return nil, fmt.Errorf("running as root, PostgreSQL must run as the postgres system user, which does not exist: %w", err)
		}
	}
	if c.dir, err = os.MkdirTemp("", "streamseal-pg-"); err != nil {
		return nil, fmt.Errorf("make cluster dir: %w", err)
	}
	if err := c.chownToRunAs(c.dir); err != nil {
		c.removeDir()
		return nil, err
	}
	if err := c.initdb(ctx); err != nil {
		c.removeDir()
		return nil, err
	}
	if err := c.start(ctx); err != nil {
		c.removeDir()
		return nil, err
	}
	return c, nil
}

// URL returns a connection URL for database on this cluster (superuser, unix socket).
func (c *Cluster) URL(database string) string {
	q := url.Values{"host": {c.dir}, "user": {c.superuser()}, "sslmode": {"disable"}}
	return "postgres:///" + url.PathEscape(database) + "?" + q.Encode()
}

// SocketDir is the directory holding the cluster's socket (PGHOST for libpq tools).
func (c *Cluster) SocketDir() string { return c.dir }

// Superuser is the role tools connect as (PGUSER).
func (c *Cluster) Superuser() string { return c.superuser() }

// Stop shuts the cluster down immediately and deletes its directory.
func (c *Cluster) Stop() error {
	err := c.run(context.Background(), "pg_ctl", "stop", "-D", c.dataDir(), "-m", "immediate", "-w")
	c.removeDir()
	return err
}

// RestartImmediate stops the server with an immediate shutdown (no checkpoint, clients cut off:
// what a crash looks like to them) and starts it again on the same data and socket; the server
// recovers from its WAL. The fault suite (internal/chaos) uses it.
func (c *Cluster) RestartImmediate(ctx context.Context) error {
	if err := c.run(ctx, "pg_ctl", "stop", "-D", c.dataDir(), "-m", "immediate", "-w"); err != nil {
		return err
	}
	return c.start(ctx)
}

// LogPath is the server's log file (gone after Stop: copy it first to keep it).
func (c *Cluster) LogPath() string { return filepath.Join(c.dir, "postgres.log") }

func (c *Cluster) dataDir() string { return filepath.Join(c.dir, "data") }

func (c *Cluster) superuser() string {
	if c.runAs != nil {
		return c.runAs.Username
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "postgres"
}

func (c *Cluster) initdb(ctx context.Context) error {
	return c.run(ctx, "initdb", "-D", c.dataDir(), "-U", c.superuser(), "-A", "trust", "-E", "UTF8",
		"--locale=C", "--no-sync")
}

func (c *Cluster) start(ctx context.Context) error {
	settings := []string{
		"-c listen_addresses=''",
		"-k " + c.dir,
		"-c max_connections=200",
		"-c shared_buffers=128MB",
	}
	if !c.durable {
		settings = append(settings, "-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off")
	}
	options := strings.Join(settings, " ")
	return c.run(ctx, "pg_ctl", "start", "-D", c.dataDir(), "-w", "-t", "60",
		"-l", filepath.Join(c.dir, "postgres.log"), "-o", options)
}

// run executes a server binary, as the postgres user when we are root.
func (c *Cluster) run(ctx context.Context, name string, args ...string) error {
	path := filepath.Join(c.binDir, name)
	var cmd *exec.Cmd
	if c.runAs != nil {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", c.runAs.Username, "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	cmd.Dir = c.dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		log := ""
		if b, readErr := os.ReadFile(filepath.Join(c.dir, "postgres.log")); readErr == nil {
			log = "\nserver log:\n" + string(b)
		}
		return fmt.Errorf("%s %s: %w\n%s%s", name, strings.Join(args, " "), err, out.String(), log)
	}
	return nil
}

func (c *Cluster) chownToRunAs(path string) error {
	if c.runAs == nil {
		return nil
	}
	uid, _ := strconv.Atoi(c.runAs.Uid)
	gid, _ := strconv.Atoi(c.runAs.Gid)
	if err := os.Chown(path, uid, gid); err != nil {
		return fmt.Errorf("give cluster dir to the postgres user: %w", err)
	}
	return nil
}

func (c *Cluster) removeDir() {
	// The server may still be writing its log while it exits; retry briefly.
	for range 20 {
		if err := os.RemoveAll(c.dir); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// FindBinDir locates a PostgreSQL 14+ server bin dir: `pg_config --bindir` first, then the
// newest /usr/lib/postgresql/*/bin, then /usr/local/pgsql/bin.
func FindBinDir() (string, error) {
	return findBinDir(candidateBinDirs())
}

func candidateBinDirs() []string {
	var candidates []string
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		candidates = append(candidates, strings.TrimSpace(string(out)))
	}
	versioned, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(versioned, func(i, j int) bool { return majorOf(versioned[i]) > majorOf(versioned[j]) })
	candidates = append(candidates, versioned...)
	return append(candidates, "/usr/local/pgsql/bin")
}

func findBinDir(candidates []string) (string, error) {
	for _, dir := range candidates {
		if hasServerBinaries(dir) {
			return dir, nil
		}
	}
	return "", ErrNoServerBinaries
}

func hasServerBinaries(dir string) bool {
	for _, name := range []string{"initdb", "pg_ctl", "postgres"} {
		if info, err := os.Stat(filepath.Join(dir, name)); err != nil || info.IsDir() {
			return false
		}
	}
	out, err := exec.Command(filepath.Join(dir, "postgres"), "--version").Output()
	if err != nil {
		return false
	}
	return versionAtLeast(string(out), 14)
}

// versionAtLeast reads "postgres (PostgreSQL) 15.18 ..." and compares the major version.
func versionAtLeast(versionLine string, major int) bool {
	fields := strings.Fields(versionLine)
	for _, f := range fields {
		if n, err := strconv.Atoi(strings.SplitN(f, ".", 2)[0]); err == nil {
			return n >= major
		}
	}
	return false
}

func majorOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}
